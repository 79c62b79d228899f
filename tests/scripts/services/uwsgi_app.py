# Target for tests/e2e/test_services.c (uWSGI, preforking: this module is imported in the master,
# then the workers are forked). The WSGI view spins in render; the master keeps a housekeeping
# thread of its own (started at import, so only the master has it: threads do not survive
# fork), as a master's metrics or reload thread does, so the master runs Python too.
import threading
import time


def render(rounds):
    total = 0
    for i in range(rounds):
        total += i * i % 7
    return total


def application(environ, start_response):
    total = render(100000)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"%d\n" % total]


def housekeeping():
    while True:
        render(20000)
        time.sleep(0.01)


threading.Thread(target=housekeeping, name="housekeeping", daemon=True).start()
