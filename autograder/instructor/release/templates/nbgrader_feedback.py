# --- Feedback: `nbgrader generate_feedback` must not show students the hidden tests -------------
# nbgrader copies autograded/ (test cells with their `### BEGIN HIDDEN TESTS` blocks: inputs and
# expected values) into the feedback HTML as it is (jupyter/nbgrader#917, #1363). Two steps fix that:
# * sources: nbgrader's own ClearHiddenTests (the preprocessor generate_assignment uses) removes
#   the blocks from the test cells;
# * outputs: nbgrader has no preprocessor for them, and a failed hidden check's traceback shows
#   its line, the lines around it and its message (the call and the expected value). So
#   HiddenTestOutputs, run first, looks at each test cell that has a hidden block: an error
#   raised above the block (a visible check) stays as one line "Error: message", without the
#   traceback's context lines; an error at or below it becomes a fixed sentence. Of what the
#   cell printed, the visible checks' results are kept: the text up to the line VISIBLE_END,
#   which the cell prints (`checks.report_visible()`) after its visible checks and before its
#   hidden block; the rest is dropped (the code under test may have printed a hidden input),
#   and all of it when that line is missing. It reads only the line number IPython puts in the
#   traceback; when that is missing it hides.
import re

import nbformat
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor

HIDDEN_FAILED = "A hidden check failed (hidden checks, their inputs and expected values are not shown)."
# printed by a checks cell between its visible and its hidden checks (the setup cell's VISIBLE_END)
VISIBLE_END = "(hidden checks run when the notebook is graded; their results are not shown)"
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CELL_LINE = re.compile(r"Cell In\[\d*\], line (\d+)")


def _text(text) -> str:
    return "".join(text) if isinstance(text, list) else text


def _is_test_cell(cell) -> bool:
    return cell.cell_type == "code" and utils.is_grade(cell) and not utils.is_solution(cell)


class HiddenTestOutputs(NbGraderPreprocessor):
    """The outputs of a test cell with hidden tests, as a student may see them (see above)."""

    def preprocess_cell(self, cell, resources, index):
        if not _is_test_cell(cell):
            return cell, resources
        marker = ClearHiddenTests(config=self.config).begin_test_delimeter
        begin = next((n for n, line in enumerate(cell.source.split("\n"), start=1) if marker in line), None)
        if begin is None:
            return cell, resources
        outputs = cell.get("outputs", [])
        stdout = [o for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"]
        printed = "".join(_text(o.get("text", "")) for o in stdout)
        end = printed.find(VISIBLE_END)  # the first one: what follows may be the code under test's
        kept = []
        if end >= 0:
            kept.append(nbformat.v4.new_output("stream", name="stdout", text=printed[: end + len(VISIBLE_END)] + "\n"))
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            where = _CELL_LINE.search(_ANSI.sub("", "\n".join(output.get("traceback", []))))
            if where and int(where.group(1)) < begin:
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
            else:
                output.update(ename="HiddenCheckFailed", evalue=HIDDEN_FAILED, traceback=[HIDDEN_FAILED])
            kept.append(output)
        cell.outputs = kept
        return cell, resources


class ClearHiddenTestsInTestCells(ClearHiddenTests):
    """nbgrader's ClearHiddenTests on the test cells only: a student's own cell that happens to
    hold the marker text keeps its code and does not stop their feedback."""

    def preprocess_cell(self, cell, resources, index):
        if not _is_test_cell(cell):
            return cell, resources
        return super().preprocess_cell(cell, resources, index)


# nbgrader's default is [GetGrades, CSSHTMLHeaderPreprocessor]
c.GenerateFeedback.preprocessors = [  # c: nbgrader_config.py's config
    HiddenTestOutputs,
    ClearHiddenTestsInTestCells,
    GetGrades,
    CSSHTMLHeaderPreprocessor,
]
