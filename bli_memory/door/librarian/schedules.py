"""Schedules a fact states, and a later fact that moves one. Pure (no I/O).

A schedule is a time of day ("07:30", "3am", the minute and hour of a cron line `30 2 * * *`) or an
interval ("every 15 minutes", `rate(15 minutes)`, `*/15 * * * *`). People move a job's schedule
without naming the old one: "the reminder job moved to 06:15 Berlin time" after "send them every day
at 07:30 Europe/Berlin", "redrive now runs every 5 min" after `rate(15 minutes)`. Such a fact names
no value it retires and no subject word for word, so :func:`rescheduled` reads it on its own terms:
the new fact says a schedule changed, each fact states one schedule of the same kind (and different),
and the two share a word of their subject beyond the words every schedule has ("job", "daily", "UTC").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from bli_memory.door.librarian.words import compound_parts, is_anchor, stem, tokens

Kind = Literal["time", "interval"]

#: "07:30", "7:30 pm"; not a part of "12:30:45", of a timestamp's "T02:30" or "+00:00", or
#: of a version "1.07:30".
_CLOCK = re.compile(r"(?<![\w:.+-])([01]?\d|2[0-3]):([0-5]\d)(?![\d:])(?:\s*([ap])\.?m\b)?", re.IGNORECASE)
#: "3am", "11 p.m.".
_HOUR_AM_PM = re.compile(r"(?<![\d:.])(1[0-2]|0?[1-9])\s?([ap])\.?m\b", re.IGNORECASE)
#: a cron line's five fields ("30 2 * * *", "*/15 * * * *", "0 4 * * 1-5"); `schedules` keeps those
#: with a "*" (a look-ahead for one scanned the rest of the line from every position: quadratic).
_CRON = re.compile(
    r"(?<![\w*/,-])([\d*/,-]+) ([\d*/,-]+) ([\d*/,?LW-]+) ([\d*/,a-z-]+) ([\d*/,a-z?L#-]+)(?![\w*/,-])",
    re.IGNORECASE,
)
#: "every 15 minutes", "every 5 min", "every 2h", `rate(15 minutes)`.
_EVERY = re.compile(
    r"\b(?:every|rate\()\s*(\d{1,4})\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b",
    re.IGNORECASE,
)
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: words every schedule has: they say nothing of which job it is.
_SCHEDULE_WORDS = frozenset(
    "job jobs task tasks run runs running ran schedule scheduled cron crontab time times timer daily nightly "
    "overnight "
    "weekly hourly every each day days night morning evening afternoon slot window utc gmt cet cest local "
    "minute minutes min mins hour hours second seconds now from on at to the a an it its is are was were be "
    "this that we our will should must has have had moved move changed change instead go goes out kick "
    "kicks off start starts fire fires trigger triggers please update pls rate".split()
)
#: words that say a schedule changed ("now", "moved", "from now on", "instead").
_CHANGE = re.compile(
    r"\b(?:now|moved|moves|rescheduled|changed|shifted|pushed|pulled|bumped|instead|anymore|no longer|switched)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Schedule:
    """One schedule a fact states: its kind, its value (minutes of the day, or seconds between runs),
    the text that states it and, for an interval, the unit it is written in."""

    kind: Kind
    value: int
    text: str
    unit: str = ""


def _clock_minutes(hour: int, minute: int, half: str | None) -> int:
    if half:
        hour = hour % 12 + (12 if half.lower() == "p" else 0)
    return hour * 60 + minute


def schedules(text: str) -> list[Schedule]:
    """The schedules a fact states, in order: times of day, intervals, and what cron lines say."""
    found: list[tuple[int, Schedule]] = []
    taken: list[range] = []
    for match in _CRON.finditer(text):
        if "*" not in match.group(0):
            continue  # five numbers in a row are no cron line
        minute, hour = match.group(1), match.group(2)
        taken.append(range(match.start(), match.end()))
        if minute.isdigit() and hour.isdigit() and int(minute) < 60 and int(hour) < 24:
            found.append((match.start(), Schedule("time", int(hour) * 60 + int(minute), match.group(0))))
        elif re.fullmatch(r"\*/\d+", minute) and hour == "*":
            found.append((match.start(), Schedule("interval", int(minute[2:]) * 60, match.group(0))))
    for match in _CLOCK.finditer(text):
        if any(match.start() in span for span in taken):
            continue
        minutes = _clock_minutes(int(match.group(1)), int(match.group(2)), match.group(3))
        found.append((match.start(), Schedule("time", minutes, match.group(0).strip())))
    for match in _HOUR_AM_PM.finditer(text):
        minutes = _clock_minutes(int(match.group(1)), 0, match.group(2))
        found.append((match.start(), Schedule("time", minutes, match.group(0).strip())))
    for match in _EVERY.finditer(text):
        unit = match.group(2).lower()[0]
        stated = text[match.start(1) : match.end(2)]  # "15 minutes", without "every"
        found.append((match.start(), Schedule("interval", int(match.group(1)) * _UNIT_S[unit], stated, unit)))
    return [schedule for _start, schedule in sorted(found, key=lambda pair: pair[0])]


#: any schedule, for extraction's signal: a time of day, an hour with am/pm, an interval (a cron line
#: is written in a code span, a signal of its own).
SCHEDULE = re.compile("|".join(f"(?:{p.pattern})" for p in (_CLOCK, _HOUR_AM_PM, _EVERY)), re.IGNORECASE)


def is_schedule(value: str) -> bool:
    """Whether a value, as a correction's pair names it, is one schedule: "07:30", "15 minutes",
    `30 2 * * *`."""
    found = schedules(value) or schedules(f"every {value}")
    return len(found) == 1 and found[0].text == value.strip()


#: where one clause of a fact ends: a colon, a semicolon, a dash between spaces.
_CLAUSE_END = re.compile(r":\s|;\s|\s[—–]\s")


def _clause_of(text: str, mention: Schedule) -> str:
    """The clause of a fact that states a schedule: "No `timezone:` option is set: the job now runs at
    01:40" names its job in "the job now runs at 01:40"."""
    at = text.find(mention.text)
    if at < 0:
        return text
    starts = [m.end() for m in _CLAUSE_END.finditer(text) if m.end() <= at]
    ends = [m.start() for m in _CLAUSE_END.finditer(text) if m.start() >= at + len(mention.text)]
    return text[(starts[-1] if starts else 0) : (ends[0] if ends else len(text))]


def _leading_part(clause: str, mention: Schedule) -> str:
    """The clause up to its first comma when the schedule is stated before it ("The nightly job starts
    at 04:15 now, …"), else the whole clause: a schedule after a comma may belong to words before it
    ("the reminder job, which mails skippers, moves to 17:00")."""
    at, comma = clause.find(mention.text), clause.find(", ")
    return clause[:comma] if 0 <= at < comma else clause


def _subject(text: str) -> set[str]:
    """The stems of the words a fact names its job with: compounds split, schedule words left out."""
    words = [part for word in tokens(text) for part in [word, *compound_parts(word)] if part]
    return {stem(w) for w in words if len(w) >= 3 and is_anchor(w) and w not in _SCHEDULE_WORDS}


def rescheduled(new_text: str, old_text: str) -> tuple[Schedule, list[Schedule]] | None:
    """(the new schedule, the old fact's mentions of the one it replaces) when the new fact says the
    schedule of the old fact's job changed: it says so ("now", "moved", "instead" …), the old fact
    states one schedule of a kind and the new one one other of that kind, and the clauses stating them
    share a word of their subject (or the new one names none beyond its schedule: "the overnight run
    is 04:30 UTC now")."""
    if not _CHANGE.search(new_text):
        return None
    new_found, old_found = schedules(new_text), schedules(old_text)
    for kind in ("time", "interval"):
        old_values = {s.value for s in old_found if s.kind == kind}
        # the one value the new fact gives that the old one lacks ("from 07:30 to 06:15" gives 06:15)
        new = [s for s in new_found if s.kind == kind and s.value not in old_values]
        if len(old_values) != 1 or len({s.value for s in new}) != 1:
            continue
        old_mentions = [s for s in old_found if s.kind == kind]
        clause = _clause_of(new_text, new[0])
        subject = _subject(clause)
        # "overnight run is 04:30 UTC now" names no job but the run: the space's one at that schedule;
        # so does "The nightly job starts at 04:15 now, the vendor pushed the uploads later", whose
        # words after the comma say why (the part before the comma holds no word the clause lacks)
        if not _subject(_leading_part(clause, new[0])) or subject & _subject(
            _clause_of(old_text, old_mentions[0])
        ):
            return new[0], old_mentions
    return None


def _written_as(new: Schedule, old: Schedule) -> str:
    """The new schedule as the old mention writes it: a cron line keeps its other fields, an interval
    its unit when the new one is a whole number of it; else as the new fact writes it."""
    if _CRON.fullmatch(old.text):
        fields = old.text.split(" ")
        if new.kind == "time":
            fields[0], fields[1] = str(new.value % 60), str(new.value // 60)
        elif new.value % 60 == 0 and fields[1] == "*":
            fields[0] = f"*/{new.value // 60}"
        else:
            return new.text
        return " ".join(fields)
    if old.kind == "interval" and old.unit and new.value % _UNIT_S[old.unit] == 0:
        return re.sub(r"\d+", str(new.value // _UNIT_S[old.unit]), old.text, count=1)
    if new.kind == "time" and _CRON.fullmatch(new.text):
        return f"{new.value // 60:02d}:{new.value % 60:02d}"
    return new.text


def reschedule(old_text: str, new_text: str) -> str | None:
    """The old fact with its schedule moved as the new fact says (:func:`rescheduled`), or None."""
    found = rescheduled(new_text, old_text)
    return None if found is None else moved_in(old_text, *found)


def moved_in(old_text: str, new: Schedule, old: list[Schedule]) -> str | None:
    """The old fact with its mentions `old` of a schedule moved to `new`, each written in its own form
    ("`30 2 * * *` (02:30 UTC)" -> "`0 4 * * *` (04:00 UTC)"), or None when nothing changed."""
    out = old_text
    for mention in sorted(old, key=lambda s: -len(s.text)):
        pattern = re.compile(rf"(?<![\w:*/]){re.escape(mention.text)}(?![\w:*/])")
        out = pattern.sub(_written_as(new, mention), out)
    return out if out != old_text else None
