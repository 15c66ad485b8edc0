# A fake upstream source for tests/kb_sources/run.py: messages written as several string
# literals that Python joins.
def check(port, rank):
    if port < 0:
        raise ValueError(
            "The rendezvous port is out of range; "
            "pick a port between 1024 and 65535"
        )
    raise RuntimeError(f"Rank {rank} lost its heartbeat "
                       f"after {port} seconds of silence")


# A comment quoting a message is not where it is printed:
# "The fixture's watchdog gave up on the store after a long wait"
