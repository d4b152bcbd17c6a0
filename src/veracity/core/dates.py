"""One date parser for every part that reads dates: web and scholarly APIs, local corpus
files and benchmark loaders.

This module imports nothing from veracity, so every layer may use it.
"""

from __future__ import annotations

import datetime as _dt
import email.utils
import re
from collections.abc import Sequence
from typing import Any

UTC = _dt.timezone.utc

_RELATIVE = re.compile(
    r"^(\d+|an?|one)\s+(second|minute|hour|day|week|month|year)s?\s+ago$", re.IGNORECASE
)
_UNIT_DAYS = {
    "second": 1 / 86400,
    "minute": 1 / 1440,
    "hour": 1 / 24,
    "day": 1,
    "week": 7,
    "month": 30,
    "year": 365,
}
WRITTEN_FORMATS = (
    "%B %d, %Y",  # February 10, 2023
    "%b %d, %Y",  # Feb 10, 2023
    "%d %B %Y",  # 10 February 2023
    "%d %b %Y",  # 10 Feb 2023
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%Y-%m",
    "%Y %b %d",  # PubMed: 2019 Mar 5
    "%Y %b",
)


def parse_date(
    value: Any,
    *,
    formats: Sequence[str] = (),
    lenient: bool = False,
    tz: _dt.tzinfo | None = None,
    now: _dt.datetime | None = None,
) -> _dt.datetime | None:
    """A point in time from a date-like value; None when the value is missing (None or
    blank text).

    Read, in order: datetime and date objects, Unix timestamps (UTC), the strptime
    `formats` given, a bare year, ISO 8601 (with or without time and zone, ``Z``).
    `lenient` also reads RFC 2822, written dates ("February 10, 2023", "10 Feb 2023",
    "2019 Mar 5", "02/10/2023") and relative ages ("3 days ago", "an hour ago", counted
    back from `now`), and gives None instead of raising when nothing fits.

    Args:
        value: the value to read.
        formats: strptime formats tried first (a data set's own format).
        lenient: read the written and relative forms; unreadable values give None.
        tz: the zone of a time that names none (None: leave it naive).
        now: the reference time of relative ages (default: the current time).

    Raises:
        ValueError: (not lenient) the value fits none of the forms.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    found = _read(value, formats, lenient, now)
    if found is None:
        if lenient:
            return None
        if formats:
            shown = " or ".join(repr(f) for f in formats)
            raise ValueError(f"cannot read date {value!r}: it does not match the format {shown}")
        raise ValueError(f"cannot read date {value!r}; use ISO format (YYYY-MM-DD)")
    return found.replace(tzinfo=tz) if tz is not None and found.tzinfo is None else found


def _read(
    value: Any, formats: Sequence[str], lenient: bool, now: _dt.datetime | None
) -> _dt.datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, _dt.datetime):
        return value
    if isinstance(value, _dt.date):
        return _dt.datetime(value.year, value.month, value.day)
    if isinstance(value, int | float):
        return _dt.datetime.fromtimestamp(float(value), tz=UTC)
    text = str(value).strip()
    for fmt in formats:
        try:
            return _dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
    if re.fullmatch(r"\d{4}", text):
        return _dt.datetime(int(text), 1, 1)
    try:
        return _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        pass
    return _read_written(text, now) if lenient else None


def _read_written(text: str, now: _dt.datetime | None) -> _dt.datetime | None:
    relative = _RELATIVE.match(text)
    if relative:
        n = 1 if relative.group(1).lower() in ("a", "an", "one") else int(relative.group(1))
        days = n * _UNIT_DAYS[relative.group(2).lower()]
        return (now or _dt.datetime.now(UTC)) - _dt.timedelta(days=days)
    try:
        return email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        pass
    for fmt in WRITTEN_FORMATS:
        try:
            return _dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None
