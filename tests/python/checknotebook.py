"""Executes a notebook headless (nbconvert) and checks that every cell ran without an error and
that it drew at least the figures it should: checknotebook.py NOTEBOOK OUT FIGURES."""

import json
import subprocess
import sys

notebook, executed, figures = sys.argv[1], sys.argv[2], int(sys.argv[3])
subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute", "--output", executed,
                "--ExecutePreprocessor.timeout=600", notebook], check=True)
with open(executed) as handle:
    cells = json.load(handle)["cells"]
drawn = 0
for index, cell in enumerate(cells):
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            sys.exit(f"cell {index}: {output['ename']}: {output['evalue']}")
        drawn += "image/png" in output.get("data", {})
code = [cell for cell in cells if cell["cell_type"] == "code"]
if any(cell.get("execution_count") is None for cell in code):
    sys.exit("a code cell did not run")
if drawn < figures:
    sys.exit(f"{drawn} figures drawn, expected {figures}")
print(f"{notebook}: {len(code)} code cells ran, {drawn} figures")
