# A CMake comment: "The fixture's watchdog gave up on the store after a long wait"
set(X 1)
