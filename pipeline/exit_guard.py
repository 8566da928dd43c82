"""Plugin code that calls ``os._exit`` while primebot runs it raises instead of ending the process
(§8).

``sys.exit`` in a plugin is an exception primebot turns into a ``PluginError``
naming the plugin; ``os._exit`` would end the process at once, with whatever
exit code the plugin chose (0 reads as success) and nothing recorded. Inside
``no_hard_exit()`` (around plugin imports, ``register_*`` hooks and stage runs)
``os._exit(code)`` raises ``HardExit`` instead, a ``SystemExit`` the same
handlers name. A forked child process still exits as it means to.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


class HardExit(SystemExit):
    """``os._exit(code)`` called by plugin code inside ``no_hard_exit``: raised instead of ending
    the process."""

    call = "os._exit"


def exit_call(exc: SystemExit) -> str:
    """How a plugin tried to end the process: ``sys.exit(0)`` or ``os._exit(0)``."""
    return f"{getattr(exc, 'call', 'sys.exit')}({exc.code!r})"


@contextlib.contextmanager
def no_hard_exit() -> Iterator[None]:
    """Inside the block, ``os._exit`` in this process raises ``HardExit``; restored after."""
    pid, real = os.getpid(), os._exit

    def refuse(code: int) -> None:
        if os.getpid() != pid:  # a forked child (multiprocessing) ends as it means to
            real(code)
        raise HardExit(code)

    os._exit = refuse
    try:
        yield
    finally:
        os._exit = real
