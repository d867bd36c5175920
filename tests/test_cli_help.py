"""`tablespec --help` and every subcommand's help describe every argument (issue 27)."""
from __future__ import annotations

import argparse

import pytest
from _support import ROOT

from tablespec.cli import _parser


def _parsers(parser: argparse.ArgumentParser, name: str = "tablespec"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {command}")


def test_every_argument_of_every_command_has_help():
    undescribed = []
    for name, parser in _parsers(_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not action.help or action.help == argparse.SUPPRESS:
                undescribed.append(f"{name}: {'/'.join(action.option_strings) or action.metavar or action.dest}")
            if isinstance(action, argparse._SubParsersAction):
                undescribed += [f"{name} {c.dest}" for c in action._choices_actions if not c.help]
    assert undescribed == []


def test_apply_help_and_docs_say_a_saved_plan_applies_without_asking(capsys):
    """Terraform's convention, kept (the saved plan was reviewed when it was made); help and docs/cli.md
    say so, and test_saved_plan_applies_and_refuses_when_stale applies one with no terminal."""
    with pytest.raises(SystemExit):
        _parser().parse_args(["apply", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "A saved plan (PLAN.json from `plan --out`) applies without asking" in text
    assert "--auto-approve do not ask for confirmation (a saved plan never asks)" in text
    docs = " ".join((ROOT / "docs" / "cli.md").read_text().split())
    assert "`apply PLAN.json` applies exactly that saved plan without asking" in docs
