"""The ``det`` command line, run as a real process."""

from det_cli_testing import run_det


def test_version_and_help():
    out = run_det(["--version"])
    assert out.returncode == 0 and "det 0.13.0" in out.stdout
    out = run_det(["--help"])
    assert "experiment" in out.stdout and "preview-search" in out.stdout


def test_without_master_explains_how_to_run_locally(tiny_dir):
    out = run_det(["-m", "localhost:1", "e", "create", tiny_dir / "const.yaml", tiny_dir])
    assert out.returncode == 1
    assert "localhost:1" in out.stderr and "--local" in out.stderr


def test_bad_arguments_exit_2(tiny_dir):
    out = run_det(["e", "create", tiny_dir / "const.yaml"])
    assert out.returncode == 2 and "model_def" in out.stderr


def test_preview_search_shows_the_asha_plan(examples_dir):
    out = run_det(["preview-search", examples_dir / "digits_pytorch" / "adaptive.yaml"])
    assert out.returncode == 0, out.stderr
    assert "Total: 16 trials" in out.stdout
    assert "epochs" in out.stdout


def test_config_that_is_not_yaml_is_named_before_contacting_a_master(tiny_dir, tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("searcher: [1,\n")
    out = run_det(["-m", "localhost:1", "e", "create", bad, tiny_dir])
    assert out.returncode == 1
    assert f"Invalid config file {bad}" in out.stderr and "not valid YAML" in out.stderr
    assert "localhost:1" not in out.stderr  # failed before any request
