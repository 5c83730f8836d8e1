"""The atoms are reachable from the top-level package, lazily."""
import subprocess
import sys

import tilecraft as tc
import tilecraft.atoms as atoms


def test_every_atom_name_is_exported_at_top_level():
    assert set(atoms.__all__) == set(tc._ATOM_NAMES)
    assert tc.make_tiled_mma is atoms.make_tiled_mma and tc.ldmatrix is atoms.ldmatrix


def test_import_tilecraft_does_not_load_atoms_dsl_or_gpu_stack():
    code = ("import sys, tilecraft; bad = [m for m in ('tilecraft.atoms', 'tilecraft.dsl', 'torch', 'cuda.core', "
            "'numpy') if m in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
