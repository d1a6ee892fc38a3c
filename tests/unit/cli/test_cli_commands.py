"""The ``stoker`` command's parsers: numeric options checked, parse errors in one line."""

from __future__ import annotations

import itertools

import pytest

from stoker.cli import build_parser, main

_BAD_OPTIONS = [
    (["logs", "show", "d", "t", "--height", "1"], "0 or an integer from 2 to 1000"),
    (["logs", "show", "d", "t", "--height", "-2"], "0 or an integer from 2 to 1000"),
    (["logs", "show", "d", "t", "--height", "100000000000"], "0 or an integer from 2 to 1000"),
    (["logs", "show", "d", "t", "--rows", "0"], "an integer >= 1"),
    (["logs", "show", "d", "t", "--width", "-5"], "an integer >= 1"),
    (["logs", "show", "d", "t", "--width", "2.5"], "an integer >= 1"),
    *(
        (["logs", "show", "d", "t", "--follow", "--interval", value], "a number in [0.01, 86400]")
        for value in ("-1", "0", "0.001", "nan", "inf", "1e300")
    ),
    *(
        (["logs", "plot", "d", "t", "-o", "x.png", "--smoothing", value], "a number in [0, 1)")
        for value in ("-0.1", "1", "nan", "inf", "1e300")
    ),
    (["demo", "--epochs", "0"], "an integer >= 1"),
    (["demo", "--batch-size", "-1"], "an integer >= 1"),
    (["demo", "--workers", "-1"], "an integer from 0 to 64"),
    (["demo", "--workers", "1000000"], "an integer from 0 to 64"),
    (["demo", "--seed", "-1"], "an integer >= 0"),
    (["demo", "--samples", "4"], "an integer from 5 to 100000"),
    (["demo", "--samples", "1000000000"], "an integer from 5 to 100000"),
    *(
        (["demo", "--lr", value], "a number in (0, 10]")
        for value in ("0", "-1", "nan", "inf", "1e300")
    ),
    (["demo", "--port", "0"], "an integer from 1 to 65535"),
    (["demo", "--port", "70000"], "an integer from 1 to 65535"),
]


@pytest.mark.parametrize(("argv", "expected"), _BAD_OPTIONS)
def test_a_number_out_of_range_is_one_line_naming_option_value_and_range(
    argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Numeric options of `stoker logs` and `stoker demo` refuse values that cannot work.

    Every numeric option of `stoker logs` and `stoker demo` refuses 0, negative, nan, inf
    or huge values where they cannot work: one stderr line with the option, the value given and
    the valid range, exit status 2 (--height 1, --interval -1/nan/inf, --samples 4, --seed -1,
    --lr nan used to end in a traceback).
    """
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    option, value = argv[-2], argv[-1]
    assert f"argument {option}: must be {expected}, got {value!r}" in err
    assert "--help" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["logs", "show", "d", "t", "--height", "0", "--rows", "1", "--width", "1"],
        ["logs", "show", "d", "t", "--height", "2", "--interval", "0.01"],
        ["logs", "show", "d", "t", "--height", "1000", "--interval", "86400"],
        ["logs", "plot", "d", "t", "-o", "x.png", "--smoothing", "0"],
        ["logs", "plot", "d", "t", "-o", "x.png", "--smoothing", "0.999"],
        ["demo", "--workers", "0", "--samples", "5", "--lr", "10", "--port", "1", "--seed", "0"],
        ["demo", "--workers", "64", "--samples", "100000", "--lr", "1e-9", "--port", "65535"],
    ],
)
def test_the_ends_of_each_range_are_accepted(argv: list[str]) -> None:
    """The bounds named in the errors are themselves valid values."""
    args = build_parser().parse_args(argv)
    for option, text in itertools.pairwise(argv):
        if option.startswith("--"):
            assert getattr(args, option[2:].replace("-", "_")) == float(text)


def test_other_parse_errors_are_one_line_too(capsys: pytest.CaptureFixture[str]) -> None:
    """A missing argument or an unknown option is also one line, not argparse's usage block."""
    for argv in (["logs", "show", "d"], ["logs", "ls", "d", "--bogus", "a\nb"]):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1, err
        assert err.startswith("stoker")
