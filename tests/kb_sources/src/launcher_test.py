# A test that expects the message is not where it is printed.
def test_gave_up():
    expect("The fixture's watchdog gave up on the store after a long wait")
