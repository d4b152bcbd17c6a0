"""`veracity.core.dates.parse_date`: the one date parser."""

import datetime as dt

import pytest

from veracity.core.dates import UTC, parse_date


def test_strict_forms_and_errors():
    assert parse_date("2019") == dt.datetime(2019, 1, 1)
    assert parse_date("2019-03-04") == dt.datetime(2019, 3, 4)
    assert parse_date("2019-03-04T05:06:07Z").tzinfo is not None
    assert parse_date(0) == dt.datetime(1970, 1, 1, tzinfo=UTC)
    assert parse_date(dt.date(2020, 2, 3)) == dt.datetime(2020, 2, 3)
    assert parse_date("  ") is None and parse_date(None) is None
    for bad in (True, "last spring", "10 Feb 2023"):  # written forms need lenient
        with pytest.raises(ValueError, match="cannot read date"):
            parse_date(bad)


def test_a_data_sets_own_format_comes_first():
    assert parse_date("04-03-2019", formats=("%d-%m-%Y",)) == dt.datetime(2019, 3, 4)
    with pytest.raises(ValueError, match="'%d-%m-%Y'"):
        parse_date("March 4", formats=("%d-%m-%Y",))


def test_lenient_reads_written_dates_and_gives_none_otherwise():
    now = dt.datetime(2024, 1, 10, tzinfo=UTC)
    assert parse_date("Feb 10, 2023", lenient=True) == dt.datetime(2023, 2, 10)
    assert parse_date("2 weeks ago", lenient=True, now=now) == now - dt.timedelta(days=14)
    assert parse_date("whenever", lenient=True) is None
    assert parse_date("2023-02-10", lenient=True, tz=UTC).tzinfo is UTC
