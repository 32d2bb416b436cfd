"""Exit codes, the same for every command: the verdict on the log, or why there is none."""

from __future__ import annotations

EXIT_READY = 0  # the server is ready (check, compare: every expectation holds)
EXIT_FAILED = 1  # startup failed (check, compare: an expectation is violated)
EXIT_USAGE = 2  # usage or input error: one line on stderr
EXIT_STARTING = 3  # still starting when the input ended
EXIT_TIMEOUT = 124  # follow --timeout ran out (as timeout(1) says)
EXIT_INTERRUPTED = 130  # SIGINT (128 + 2, as shells say)
EXIT_OUTPUT_CLOSED = 141  # stdout closed by its reader (| head): SIGPIPE's 128 + 13, as shells say; never 0

OUTCOME_EXIT = {"ready": EXIT_READY, "failed": EXIT_FAILED, "starting": EXIT_STARTING}
