"""Graceful stop on SIGINT/SIGTERM: the first signal asks, the second one aborts."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def install_stop_handlers(on_stop: Callable[[str], None]) -> Callable[[], None]:
    """Call ``on_stop(signal_name)`` on the first SIGINT/SIGTERM; return a function restoring the
    old handlers.

    After the first signal the handler of that signal reverts (SIGINT raises
    KeyboardInterrupt, SIGTERM terminates), so a second one stops at once.
    Outside the main thread Python cannot install handlers: nothing happens.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handler(signum, frame) -> None:
        signal.signal(signum,
                      signal.default_int_handler if signum == signal.SIGINT else previous[signum])
        on_stop(signal.Signals(signum).name)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore
