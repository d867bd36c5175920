"""A Spark failure as the one line a user needs: Spark's wrappers peeled off, a Python worker's
traceback reduced to its exception. The full story is in the session's log (engine/session.py)."""
from __future__ import annotations

# messages that only say another exception follows
WRAPPERS = ("Job aborted due to stage failure", "Exception thrown in awaitResult")
TRACEBACK = "Traceback (most recent call last):"


def is_spark_failure(e: BaseException) -> bool:
    """Raised by pyspark or py4j (told without importing either)."""
    return type(e).__module__.startswith(("pyspark", "py4j"))


def one_line(e: BaseException) -> str:
    """The first Java message in the cause chain that is not a wrapper, or the exception line of a
    Python worker's traceback."""
    text = _java_message(getattr(e, "java_exception", None)) or str(e) or type(e).__name__
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if TRACEBACK in text:
        raised = [ln for ln in lines if ": " in ln and ln.split(": ", 1)[0].replace(".", "").replace("_", "").isalnum()]
        if raised:
            return raised[-1]
    return lines[0] if lines else type(e).__name__


def _java_message(java) -> str | None:
    first = None
    for _ in range(20):  # along the cause chain
        if java is None:
            break
        message = (java.getMessage() or "").strip()
        if message and not message.startswith(WRAPPERS):
            return message
        first, java = first or message, java.getCause()
    return first
