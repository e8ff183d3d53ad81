"""A warning raised while a claim runs goes into the claim's notes, not onto the console of the run."""

import sys
import textwrap
import warnings

from attnverify import cli
from attnverify.checks import run_claim
from attnverify.theories import from_file

NOISY = textwrap.dedent('''
    """Noisy: a claim whose body warns"""
    import warnings

    from attnverify import Theory, st, within_error
    from attnverify.checks import close

    theory = Theory("noisy")

    @theory.claim(x=st.floats(0, 1), examples={"quick": 3, "thorough": 3})
    def identity(x):
        """x equals itself."""
        warnings.warn("the series converges slowly", RuntimeWarning)
        return close(x, x)
''')


def _to_console(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def test_a_warning_in_a_claims_body_is_a_note_of_its_result_not_console_output(tmp_path, capsys):
    path = tmp_path / "noisy.py"
    path.write_text(NOISY)
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        result = run_claim(from_file(str(path)).claims[0])
    assert escaped == [], [str(w.message) for w in escaped]
    assert result.status == "holds"
    assert any(note.startswith("RuntimeWarning at noisy.py:") and "the series converges slowly (in 3 of 3 examples)"
               in note for note in result.notes), result.notes
    assert result.as_dict()["examples"][0]["warnings"], result.as_dict()["examples"][0]

    with warnings.catch_warnings():  # a warning that left the run would be printed, as on a terminal
        warnings.simplefilter("always")
        warnings.showwarning = _to_console
        assert cli.main(["verify", str(path), "--backend", "numpy"]) == 0
    console = capsys.readouterr()
    assert "Warning" not in console.err and "converges slowly" not in console.err, console.err


def test_a_claim_checked_in_another_thread_leaves_its_warnings_to_the_process(tmp_path):
    """Python keeps one record of warnings for the whole process: a claim checked outside the main thread (a
    threaded Dask worker) neither records them (another thread's claim would be credited with them) nor changes
    how the process shows warnings afterwards."""
    import threading

    path = tmp_path / "noisy.py"
    path.write_text(NOISY)
    shown = warnings.showwarning, warnings._showwarnmsg_impl
    found = {}
    with warnings.catch_warnings(record=True) as escaped:
        warnings.simplefilter("always")
        worker = threading.Thread(target=lambda: found.update(result=run_claim(from_file(str(path)).claims[0])))
        worker.start()
        worker.join()
    assert found["result"].status == "holds"
    assert not [n for n in found["result"].notes if "Warning" in n]
    assert len(escaped) == 3 and (warnings.showwarning, warnings._showwarnmsg_impl) == shown
