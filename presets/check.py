#!/usr/bin/env python3
"""Validate retry's preset files and run their fixtures.

    python3 presets/check.py                 # the built-in presets and all fixtures
    python3 presets/check.py -v              # ... and say how each fixture was decided
    python3 presets/check.py --user FILE     # a user presets file (sources optional)

Standard library only (Python 3.11+, for tomllib). The schema is described in
presets/README.md. A fixture is judged the way retry judges an attempt when
the preset is the only rule set (contract, "Classifying an attempt", rules
1-4): a permanent output pattern that matched a scanned line, then a
throttled one, then a transient one, then the permanent exit codes, then the
transient and throttled ones, then `other_exit`. `throttled` is a kind of
transient: the failure is known to be throttling. Patterns are matched per line, on bytes, unanchored, as
`regex::bytes::Regex::is_match` does; Python's `re` agrees with Rust's
`regex` on the plain syntax the presets are written in, and constructs that
differ (look-around, backreferences, atomic groups, a global flag after the
start) are rejected.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESERVED = {"list", "show", "none"}
NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
KINDS = ("transient", "throttled", "permanent")
# other_exit names a verdict for failures no rule knows: never throttling.
OTHER_EXIT = ("transient", "permanent")
PRESET_KEYS = {
    "description": str,
    "commands": list,
    "retry_after": bool,
    "other_exit": str,
    "notes": str,
    "exit": list,
    "output": list,
}
EXIT_KEYS = {"kind": str, "codes": str, "means": str, "source": str}
OUTPUT_KEYS = {"kind": str, "pattern": str, "means": str, "source": str}
CASE_KEYS = {
    "preset": str,
    "command": str,
    "exit": int,
    "stderr": list,
    "stdout": list,
    "verdict": str,
    "means": str,
    "source": str,
    "note": str,
}
# Syntax that Rust's regex crate lacks or reads differently.
UNSUPPORTED = [
    (re.compile(r"\(\?<?[=!]"), "look-around is not supported by Rust's regex"),
    (re.compile(r"\(\?>"), "atomic groups are not supported by Rust's regex"),
    (re.compile(r"(?<!\\)\\[1-9]"), "backreferences are not supported by Rust's regex"),
    (re.compile(r"(?<!\\)\\[AZz]"), "use ^ and $ (Rust's \\z, Python's \\Z differ)"),
    (re.compile(r"[*+?}]\+"), "possessive quantifiers are not supported by Rust's regex"),
    (re.compile(r"\(\?P?<[A-Za-z]"), "name no groups: messages use {N}"),
]
PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(\d+)\}|\{|\}")


class Problems:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.errors.append(f"{where}: {what}")


def plain_text(text: str) -> bool:
    """What schema.rs accepts for a description or a means: no control
    character (C0, DEL, C1, nor the Unicode line and paragraph separators),
    at most 500 characters."""
    unprintable = any(
        ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F or c in "\u2028\u2029" for c in text
    )
    return not unprintable and len(text) <= 500


def parse_codes(text: str) -> list[int]:
    """The --retry-on-exit syntax: `1,7,28,52-56`."""
    codes: list[int] = []
    for item in text.split(","):
        item = item.strip()
        m = re.fullmatch(r"(\d{1,3})(?:-(\d{1,3}))?", item)
        if not m:
            raise ValueError(f"{item!r} is not a code or a range")
        low = int(m.group(1))
        high = int(m.group(2)) if m.group(2) else low
        if high > 255 or low > high:
            raise ValueError(f"{item!r} is outside 0-255 or reversed")
        codes.extend(range(low, high + 1))
    return codes


def render(means: str, match: re.Match[bytes] | None) -> str:
    """`{1}` becomes capture group 1 (empty when it did not take part)."""

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "{{":
            return "{"
        if token == "}}":
            return "}"
        if match is None:
            return token
        group = match.group(int(m.group(1))) if m.group(1) else None
        return group.decode("utf-8", "replace") if group else ""

    return PLACEHOLDER.sub(sub, means)


@dataclass
class OutputRule:
    kind: str
    pattern: str
    regex: re.Pattern[bytes]
    means: str
    source: str
    hits: int = 0


@dataclass
class ExitRule:
    kind: str
    codes: list[int]
    means: str
    source: str
    hits: int = 0


@dataclass
class Preset:
    name: str
    file: Path
    description: str
    commands: list[str]
    retry_after: bool
    other_exit: str
    exits: list[ExitRule] = field(default_factory=list)
    outputs: list[OutputRule] = field(default_factory=list)

    def decide(self, code: int, lines: list[bytes]) -> tuple[str, str, str]:
        """(verdict, which rule, what it means) for one failed attempt."""
        for kind in ("permanent", "throttled", "transient"):
            for index, rule in enumerate(self.outputs):
                if rule.kind != kind:
                    continue
                for line in lines:
                    m = rule.regex.search(line)
                    if m:
                        rule.hits += 1
                        return kind, f"output rule {index + 1}", render(rule.means, m)
        # A code is in one exit rule only: transient and throttled together.
        for kinds in (("permanent",), ("transient", "throttled")):
            for index, rule in enumerate(self.exits):
                if rule.kind in kinds and code in rule.codes:
                    rule.hits += 1
                    return rule.kind, f"exit rule {index + 1}", rule.means
        if self.other_exit == "permanent":
            return "permanent", "other_exit", f"exit code {code} is in no transient rule"
        return "transient", "other_exit", "retry's default (transient)"


def check_type(problems: Problems, where: str, table: dict, keys: dict, required: set[str]) -> bool:
    ok = True
    for key, value in table.items():
        if key not in keys:
            problems.add(where, f"unknown key {key!r} (known: {', '.join(sorted(keys))})")
        elif not isinstance(value, keys[key]) or (keys[key] is int and isinstance(value, bool)):
            problems.add(where, f"{key} must be a {keys[key].__name__}")
            ok = False
    for key in sorted(required - table.keys()):
        problems.add(where, f"{key} is required")
        ok = False
    return ok


def compile_pattern(problems: Problems, where: str, pattern: str, means: str) -> re.Pattern[bytes] | None:
    for probe, why in UNSUPPORTED:
        if probe.search(pattern):
            problems.add(where, f"pattern {pattern!r}: {why}")
    if re.search(r".\(\?[a-zA-Z]+\)", pattern):
        problems.add(where, f"pattern {pattern!r}: a flag group after the start applies to the rest in Rust but is an error in Python; use (?i:...)")
    try:
        regex = re.compile(pattern.encode())
    except re.error as e:
        problems.add(where, f"pattern {pattern!r} does not compile: {e}")
        return None
    if regex.search(b""):
        problems.add(where, f"pattern {pattern!r} matches an empty line")
    for m in PLACEHOLDER.finditer(means):
        token = m.group(0)
        if token in ("{", "}"):
            problems.add(where, f"means {means!r}: a lone brace (write {{{{ or }}}})")
        elif m.group(1) and not 1 <= int(m.group(1)) <= regex.groups:
            problems.add(where, f"means {means!r}: {token} but the pattern has {regex.groups} group(s)")
    return regex


def load_presets(path: Path, problems: Problems, builtin: bool) -> list[Preset]:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        problems.add(str(path), f"not valid TOML: {e}")
        return []
    for key in doc:
        if key != "preset":
            problems.add(str(path), f"unknown top-level key {key!r}: presets go in [preset.NAME] tables")
    presets = []
    for name, table in doc.get("preset", {}).items():
        where = f"{path.name}: preset {name}"
        if not isinstance(table, dict):
            problems.add(where, "must be a table")
            continue
        if not NAME.match(name):
            problems.add(where, "a name is lower-case letters, digits, '.', '_' and '-'")
        if name in RESERVED:
            problems.add(where, f"{name!r} is reserved (list, show, none)")
        if not check_type(problems, where, table, PRESET_KEYS, {"description", "commands"}):
            continue
        description = table["description"]
        if not description.strip() or "\n" in description:
            problems.add(where, "description must be one non-empty line")
        elif not plain_text(description):
            problems.add(where, "description must be plain text of at most 500 characters")
        commands = table["commands"]
        for command in commands:
            if not isinstance(command, str) or not command or "/" in command or command != command.strip() or " " in command:
                problems.add(where, f"command {command!r} must be a file name (no '/', no spaces)")
        if len(set(commands)) != len(commands):
            problems.add(where, "a command is listed twice")
        exits: list[ExitRule] = []
        seen_codes: dict[int, int] = {}
        for index, rule in enumerate(table.get("exit", [])):
            rwhere = f"{where}: exit rule {index + 1}"
            if not isinstance(rule, dict):
                problems.add(rwhere, "must be a table")
                continue
            required = {"kind", "codes", "means"} | ({"source"} if builtin else set())
            if not check_type(problems, rwhere, rule, EXIT_KEYS, required):
                continue
            if rule["kind"] not in KINDS:
                problems.add(rwhere, f"kind must be one of {KINDS}")
            try:
                codes = parse_codes(rule["codes"])
            except ValueError as e:
                problems.add(rwhere, f"codes: {e}")
                continue
            if 0 in codes:
                problems.add(rwhere, "0 is success, not a failure (see --success-on-exit)")
            if len(set(codes)) != len(codes):
                problems.add(rwhere, "a code is listed twice")
            for code in sorted(set(codes)):
                if code in seen_codes:
                    problems.add(rwhere, f"code {code} is already in exit rule {seen_codes[code] + 1}")
                seen_codes[code] = index
            if not rule["means"].strip() or "\n" in rule["means"]:
                problems.add(rwhere, "means must be one non-empty line")
            elif not plain_text(rule["means"]):
                problems.add(rwhere, "means must be plain text of at most 500 characters")
            if "{" in rule["means"].replace("{{", "").replace("}}", ""):
                problems.add(rwhere, "means of an exit rule has no capture groups to quote")
            exits.append(ExitRule(rule["kind"], codes, rule["means"], rule.get("source", "")))
        outputs: list[OutputRule] = []
        for index, rule in enumerate(table.get("output", [])):
            rwhere = f"{where}: output rule {index + 1}"
            if not isinstance(rule, dict):
                problems.add(rwhere, "must be a table")
                continue
            required = {"kind", "pattern", "means"} | ({"source"} if builtin else set())
            if not check_type(problems, rwhere, rule, OUTPUT_KEYS, required):
                continue
            if rule["kind"] not in KINDS:
                problems.add(rwhere, f"kind must be one of {KINDS}")
            if not rule["means"].strip() or "\n" in rule["means"]:
                problems.add(rwhere, "means must be one non-empty line")
            elif not plain_text(rule["means"]):
                problems.add(rwhere, "means must be plain text of at most 500 characters")
            regex = compile_pattern(problems, rwhere, rule["pattern"], rule["means"])
            if regex is not None:
                outputs.append(OutputRule(rule["kind"], rule["pattern"], regex, rule["means"], rule.get("source", "")))
        for rule in table.get("output", []) + table.get("exit", []):
            if builtin and isinstance(rule, dict) and not str(rule.get("source", "")).strip():
                problems.add(where, "every built-in rule cites its source")
        has_transient_exit = any(r.kind in ("transient", "throttled") for r in exits)
        other_exit = table.get("other_exit", "permanent" if has_transient_exit else "transient")
        if other_exit not in OTHER_EXIT:
            problems.add(where, f"other_exit must be one of {OTHER_EXIT}")
        if builtin and "other_exit" not in table:
            problems.add(where, "built-in presets say other_exit explicitly")
        presets.append(
            Preset(name, path, description, commands, table.get("retry_after", False), other_exit, exits, outputs)
        )
    return presets


def run_fixtures(path: Path, presets: dict[str, Preset], by_command: dict[str, str], problems: Problems, verbose: bool) -> tuple[int, dict[str, int]]:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        problems.add(str(path), f"not valid TOML: {e}")
        return 0, {}
    for key in doc:
        if key not in ("preset", "case"):
            problems.add(path.name, f"unknown top-level key {key!r} (preset, case)")
    default = doc.get("preset")
    passed = 0
    per_preset: dict[str, int] = {}
    for index, case in enumerate(doc.get("case", [])):
        where = f"fixtures/{path.name}: case {index + 1}"
        if not check_type(problems, where, case, CASE_KEYS, {"exit", "stderr", "verdict", "source"}):
            continue
        name = case.get("preset", default)
        preset = presets.get(name)
        if preset is None:
            problems.add(where, f"no preset {name!r}")
            continue
        if case["verdict"] not in KINDS:
            problems.add(where, f"verdict must be one of {KINDS}")
            continue
        if not 1 <= case["exit"] <= 255:
            problems.add(where, "exit must be a failure code, 1-255")
            continue
        if "command" in case and by_command.get(case["command"]) != name:
            problems.add(where, f"command {case['command']!r} chooses preset {by_command.get(case['command'])!r}, not {name!r}")
        # The scanner reads stderr, and stdout too under --scan-stdout: a
        # case's stdout lines are judged as if it were given.
        lines = []
        for stream in ("stderr", "stdout"):
            for line in case.get(stream, []):
                if not isinstance(line, str) or "\n" in line or "\r" in line:
                    problems.add(where, f"{stream} holds lines, one string each: {line!r}")
                    continue
                lines.append(line.encode())
        verdict, rule, means = preset.decide(case["exit"], lines)
        label = f"[{name}] exit {case['exit']}: {verdict} by {rule} ({means})"
        if verdict != case["verdict"]:
            problems.add(where, f"expected {case['verdict']}, got {label}; stderr {case['stderr']!r}")
        elif "means" in case and case["means"] != means:
            problems.add(where, f"expected the message {case['means']!r}, got {means!r}")
        else:
            passed += 1
            per_preset[name] = per_preset.get(name, 0) + 1
            if verbose:
                first = case["stderr"][-1] if case["stderr"] else "(no output)"
                print(f"  ok {where}: {label}  <- {first[:90]!r}")
    return passed, per_preset


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="say how each fixture was decided")
    parser.add_argument("--user", type=Path, action="append", default=[], help="also validate this user presets file (sources optional)")
    parser.add_argument("--allow-uncovered", action="store_true", help="do not fail when an output rule has no fixture")
    args = parser.parse_args()

    problems = Problems()
    presets: dict[str, Preset] = {}
    by_command: dict[str, str] = {}
    files = sorted(HERE.glob("*.toml"))
    if not files:
        problems.add(str(HERE), "no preset files")
    for path in files:
        for preset in load_presets(path, problems, builtin=True):
            if preset.name in presets:
                problems.add(path.name, f"preset {preset.name} is also defined in {presets[preset.name].file.name}")
            presets[preset.name] = preset
            for command in preset.commands:
                if command in by_command:
                    problems.add(path.name, f"command {command!r} is claimed by presets {by_command[command]} and {preset.name}")
                by_command[command] = preset.name
    for path in args.user:
        user = load_presets(path, problems, builtin=False)
        print(f"{path}: {len(user)} preset(s): {', '.join(p.name for p in user) or '-'}")

    total = 0
    per_preset: dict[str, int] = {}
    for path in sorted((HERE / "fixtures").glob("*.toml")):
        passed, counts = run_fixtures(path, presets, by_command, problems, args.verbose)
        total += passed
        for name, count in counts.items():
            per_preset[name] = per_preset.get(name, 0) + count

    print(f"{'preset':<10} {'file':<14} {'commands':<22} {'exit':>4} {'output':>6} {'fixtures':>8}")
    for name, preset in presets.items():
        print(f"{name:<10} {preset.file.name:<14} {','.join(preset.commands):<22} {len(preset.exits):>4} {len(preset.outputs):>6} {per_preset.get(name, 0):>8}")
        if per_preset.get(name, 0) == 0:
            problems.add(preset.file.name, f"preset {name} has no passing fixture")
        for index, rule in enumerate(preset.outputs):
            if rule.hits == 0 and not args.allow_uncovered:
                problems.add(preset.file.name, f"preset {name}: output rule {index + 1} ({rule.pattern[:60]!r}) decides no fixture")
    print(f"{len(presets)} presets, {sum(len(p.exits) + len(p.outputs) for p in presets.values())} rules, {total} fixtures passed")
    for error in problems.errors:
        print(f"error: {error}", file=sys.stderr)
    if problems.errors:
        print(f"{len(problems.errors)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
