"""Whole-number arguments: ids and counts below their least value are usage errors."""

import argparse
import doctest

import pytest

from determined.cli import _argtypes
from determined.cli._argtypes import (checkpoint_uuid, count, port_number, positive_float,
                                      positive_int, priority)


def test_doctests():
    assert doctest.testmod(_argtypes).failed == 0


@pytest.mark.parametrize("kind, text", [(positive_int, "0"), (positive_int, "-1"), (positive_int, "1.5"),
                                        (count, "-1"), (count, "x"), (port_number, "0"),
                                        (port_number, "65536"), (priority, "0"),
                                        (priority, "100"), (positive_float, "0"),
                                        (positive_float, "-1.5"), (positive_float, "nan"),
                                        (positive_float, "inf"), (positive_float, "x"),
                                        (checkpoint_uuid, "notauuid"),
                                        (checkpoint_uuid, "4f9a1c2e11112222333344445555666"),
                                        (checkpoint_uuid, "4f9a1c2e-1111-2222-3333-44445555666g"),
                                        (checkpoint_uuid, "../4f9a1c2e-1111-2222-3333-444455556666")])
def test_out_of_range_or_not_whole_is_refused(kind, text):
    with pytest.raises(argparse.ArgumentTypeError, match=f"Expected .*Received: '{text}'"):
        kind(text)


def test_edges_are_accepted():
    assert (positive_int(" 1"), count("0"), port_number("65535")) == (1, 0, 65535)
    # A checkpoint id as the master stores it: lower case.
    assert checkpoint_uuid("4F9A1C2E-1111-2222-3333-444455556666 ") == (
        "4f9a1c2e-1111-2222-3333-444455556666")


def test_a_file_to_read_must_be_there(tmp_path):
    (tmp_path / "m.yaml").write_text("port: 1\n")
    assert _argtypes.existing_file(str(tmp_path / "m.yaml")) == str(tmp_path / "m.yaml")
    for path, why in ((tmp_path / "nope.yaml", "no such file"), (tmp_path, "a directory")):
        with pytest.raises(argparse.ArgumentTypeError,
                           match=f"Expected a file to read. Received: '{path}' \\({why}\\)"):
            _argtypes.existing_file(str(path))


def test_deploy_timeout_must_be_a_positive_number(tmp_path):
    """``det deploy local up --timeout abc`` gave argparse's bare "invalid float value"."""
    from det_cli_testing import run_det

    for text in ("abc", "0"):
        out = run_det(["deploy", "local", "up", "--data-dir", tmp_path, "--timeout", text])
        assert out.returncode == 2, out
        assert (f"argument --timeout: Expected a number greater than 0. Received: '{text}'"
                in out.stderr), out.stderr
    assert not (tmp_path / "master.log").exists()
