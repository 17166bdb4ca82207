# --- Feedback: `nbgrader generate_feedback` must not show students the hidden tests -------------
# nbgrader copies autograded/ (test cells with their `### BEGIN HIDDEN TESTS` blocks: inputs and
# expected values) into the feedback HTML as it is (jupyter/nbgrader#917, #1363). Two steps fix that:
# * sources: nbgrader's own ClearHiddenTests (the preprocessor generate_assignment uses) removes
#   the blocks from the test cells;
# * outputs: nbgrader has no preprocessor for them, and a failed hidden check's traceback shows
#   its line, the lines around it and its message (the call and the expected value). So
#   HiddenTestOutputs, run first, looks at each test cell that has a hidden block: an error
#   raised above the block (a visible check) stays as one line "Error: message", without the
#   traceback's context lines; an error at or below it becomes a fixed sentence; anything else
#   the cell printed is dropped (the code under test may have printed a hidden input). It reads
#   only the line number IPython puts in the traceback; when that is missing it hides.
import re

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests, GetGrades, NbGraderPreprocessor

HIDDEN_FAILED = "A hidden check failed (hidden checks, their inputs and expected values are not shown)."
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CELL_LINE = re.compile(r"Cell In\[\d*\], line (\d+)")


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
        kept = []
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
