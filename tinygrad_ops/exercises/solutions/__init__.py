"""The solved exercises: `tinygrad-ops exercises init DIR` writes them with the parts
between the SOLUTION markers blanked (`tinygrad-ops exercises init DIR --solved` as here)."""
