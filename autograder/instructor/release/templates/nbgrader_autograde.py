# --- Autograde: a checksum warning only where a locked cell was really changed --------------------
# nbgrader's OverwriteCells compares each locked cell of a submission with the source's checksum,
# warns "Attribute 'checksum' for cell … has changed!" and puts the source back. The source's
# checks cells hold hidden test blocks that the student's copy never had (generate_assignment
# removed them), so every checks cell of every honest submission differed: one warning per cell,
# burying the one that means a student edited a locked cell. QuietReleaseCopy puts the source back
# without a warning where the submitted cell is exactly the released one (the source with its
# hidden blocks removed, by nbgrader's own ClearHiddenTests); any other difference (an edited
# check, changed points, a deleted line) still warns as nbgrader does.
import copy

from nbgrader.api import MissingEntry
from nbgrader.converters import Autograde
from nbgrader.preprocessors import ClearHiddenTests, OverwriteCells


class QuietReleaseCopy(OverwriteCells):
    """nbgrader's OverwriteCells, silent about the one difference every submission has."""

    def preprocess_cell(self, cell, resources, index):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id is not None and cell.cell_type == "code":
            try:
                source = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
            except MissingEntry:
                source = None  # OverwriteCells says so
            if source is not None and source.locked and source.source != cell.source:
                released = copy.deepcopy(cell)
                released.source = source.source
                clear = ClearHiddenTests(config=self.config)
                clear.enforce_metadata = False
                clear._remove_hidden_test_region(released)
                if released.source == cell.source:  # the student's copy as released: restore it quietly
                    self.log.debug("cell %s: the released copy (hidden tests restored from the source)", grade_id)
                    cell.source = source.source
        return super().preprocess_cell(cell, resources, index)


# nbgrader's default is [ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
c.Autograde.sanitize_preprocessors = [  # c: nbgrader_config.py's config
    p if p is not OverwriteCells else QuietReleaseCopy for p in Autograde.class_traits()["sanitize_preprocessors"].default()
]
