"""Kernel parameter types, read from the `extern "C" __global__` declarations in CUDA C++ source.

The launcher packs arguments into the exact C types the kernel declares (a Python float passed
for a `float` parameter becomes 4 bytes, never an 8-byte double), so it needs each parameter's
type. They are parsed from the source here; a caller can also declare them as C type strings.
On a GPU the parse is cross-checked against the sizes the driver reports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# struct-module format per scalar kind; "ptr" is a 64-bit device address.
_PTR_FORMAT = "Q"
_BF16 = "bf16"

_INT_WORDS = frozenset({"unsigned", "signed", "long", "short", "int", "char"})
_NAMED_SCALARS = {
    "bool": "?",
    "int8_t": "b", "i8": "b",
    "uint8_t": "B", "u8": "B",
    "int16_t": "h", "i16": "h",
    "uint16_t": "H", "u16": "H",
    "int32_t": "i", "i32": "i",
    "uint32_t": "I", "u32": "I",
    "int64_t": "q", "i64": "q", "ptrdiff_t": "q", "intptr_t": "q", "ssize_t": "q",
    "uint64_t": "Q", "u64": "Q", "size_t": "Q", "uintptr_t": "Q",
    "float": "f", "f32": "f",
    "double": "d", "f64": "d",
    "__half": "e", "half": "e",
    "__nv_bfloat16": _BF16, "nv_bfloat16": _BF16,
    "f16": "e", "bf16": _BF16,  # atoms.cuh's 16-bit float storage types (tc::f16, tc::bf16)
}  # fmt: skip
# By-value structs whose layout is fixed by CUDA: (size, alignment).
_KNOWN_STRUCTS = {"CUtensorMap": (128, 64), "CUtensorMap_st": (128, 64)}
_QUALIFIERS = frozenset(
    {"const", "volatile", "__restrict__", "__restrict", "restrict", "__grid_constant__", "struct", "class", "typename"}
)
_NAMESPACES = ("cuda::std::", "std::", "tc::", "::")
_FORMAT_SIZES = {"?": 1, "b": 1, "B": 1, "h": 2, "H": 2, "e": 2, _BF16: 2, "i": 4, "I": 4, "f": 4, "q": 8, "Q": 8, "d": 8}
# Attribute-like specifiers that may sit between __global__ and the kernel's name.
_SPECIFIERS_WITH_ARGS = frozenset({"__launch_bounds__", "__cluster_dims__", "__maxnreg__", "__attribute__", "__align__"})

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|::|[A-Za-z_]\w*|\d\w*|\S')
_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)


@dataclass(frozen=True)
class Param:
    """One kernel parameter: its name, the C type as written, and how to pack it.

    ``kind`` is ``"ptr"`` (device address, 8 bytes), ``"scalar"`` (``fmt`` is a struct-module code,
    or ``"bf16"``), or ``"struct"`` (raw bytes, e.g. a ``CUtensorMap``; ``size`` is None when only
    the driver can tell it).
    """

    name: str
    ctype: str
    kind: str
    fmt: str | None
    size: int | None
    align: int

    def describe(self) -> str:
        """Return e.g. ``'float* a'`` for messages."""
        return f"{self.ctype} {self.name}".strip()


@dataclass(frozen=True)
class KernelDecl:
    """A `__global__` function found in the source: its name, and its params or why they can't be used."""

    name: str
    params: tuple[Param, ...] | None
    error: str | None


def _strip_comments(source: str) -> str:
    return _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0).startswith('"') else " ", source)


def param_from_ctype(ctype: str, name: str = "") -> Param:
    """Build a Param from a C type string such as ``"const float*"``, ``"int"`` or ``"CUtensorMap"``.

    Raises ValueError for a type the launcher cannot pack (references, unknown by-value structs
    are allowed but get ``size=None``).
    """
    tokens = [t for t in _TOKEN.findall(ctype) if t not in _QUALIFIERS]
    tokens = _drop_align(tokens)
    if "&" in tokens or "&&" in tokens:
        raise ValueError(f"kernel parameter {ctype!r}: references cannot be kernel parameters")
    if "*" in tokens or "[" in tokens:
        return Param(name, _spell(ctype), "ptr", _PTR_FORMAT, 8, 8)
    base = "".join(tokens)
    for ns in _NAMESPACES:
        if base.startswith(ns):
            base = base[len(ns) :]
    words = [t for t in tokens if t != "::"]
    if words and all(w in _INT_WORDS for w in words):
        fmt = _int_format(words)
        return Param(name, " ".join(words), "scalar", fmt, _FORMAT_SIZES[fmt], _FORMAT_SIZES[fmt])
    if base in _NAMED_SCALARS:
        fmt = _NAMED_SCALARS[base]
        size = _FORMAT_SIZES[fmt]
        return Param(name, base, "scalar", fmt, size, size)
    if not re.fullmatch(r"[A-Za-z_][\w:]*", base):
        raise ValueError(f"kernel parameter {ctype!r}: cannot read this type")
    size, align = _KNOWN_STRUCTS.get(base.split("::")[-1], (None, 8))
    return Param(name, base, "struct", None, size, align)


def _spell(ctype: str) -> str:
    return " ".join(ctype.split())


def _drop_align(tokens: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] in _SPECIFIERS_WITH_ARGS and i + 1 < len(tokens) and tokens[i + 1] == "(":
            i = _skip_parens(tokens, i + 1)
            continue
        out.append(tokens[i])
        i += 1
    return out


def _int_format(words: list[str]) -> str:
    unsigned = "unsigned" in words
    if "char" in words:
        code = "b"
    elif "short" in words:
        code = "h"
    elif "long" in words:
        code = "q"  # LP64: long and long long are both 8 bytes on Linux.
    else:
        code = "i"
    return code.upper() if unsigned else code


def _skip_parens(tokens: list[str], i: int) -> int:
    """Given tokens[i] == '(', return the index just past its matching ')'."""
    depth = 0
    while i < len(tokens):
        if tokens[i] == "(":
            depth += 1
        elif tokens[i] == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return i


def _split_params(tokens: list[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    depth = 0
    for t in tokens:
        if t in "(<[{":
            depth += 1
        elif t in ")>]}":
            depth -= 1
        if t == "," and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return [p for p in parts if p]


def _param_from_tokens(tokens: list[str], index: int) -> Param:
    if "=" in tokens:
        tokens = tokens[: tokens.index("=")]
    if "[" in tokens:  # `float a[]` decays to a pointer
        tokens = tokens[: tokens.index("[")] + ["*"]
    core = [t for t in _drop_align(tokens) if t not in _QUALIFIERS]
    name = ""
    # The last identifier is the parameter's name unless the type would be left empty or it is
    # itself part of a builtin type (`unsigned int`).
    if len(core) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", core[-1]) and core[-1] not in _INT_WORDS and core[-2] != "::":
        name = core[-1]
        tokens = tokens[: len(tokens) - 1 - tokens[::-1].index(name)]
    ctype = " ".join(tokens).replace(" :: ", "::").replace(" *", "*")
    return param_from_ctype(ctype, name or f"arg{index}")


def parse_signatures(source: str) -> dict[str, KernelDecl]:
    """Find every `__global__` function in `source` and parse the parameters of the C-linkage ones.

    Kernels without `extern "C"` (templates, C++ linkage) are listed with an error explaining that
    their mangled names cannot be launched by name. Parsing never raises: a declaration the parser
    cannot read is recorded with its error and reported when that kernel is requested.
    """
    tokens = [t for t in _TOKEN.findall(_preprocessor_free(_strip_comments(source)))]
    extern_c_depths = _extern_c_blocks(tokens)
    decls: dict[str, KernelDecl] = {}
    for i, t in enumerate(tokens):
        if t != "__global__":
            continue
        j = i + 1
        name = None
        while j < len(tokens):
            tok = tokens[j]
            if tok in _SPECIFIERS_WITH_ARGS and j + 1 < len(tokens) and tokens[j + 1] == "(":
                j = _skip_parens(tokens, j + 1)
                continue
            if re.fullmatch(r"[A-Za-z_]\w*", tok) and j + 1 < len(tokens) and tokens[j + 1] == "(":
                name = tok
                break
            if tok in ";{}":
                break
            j += 1
        if name is None:
            continue
        end = _skip_parens(tokens, j + 1)
        if not (_has_extern_c_prefix(tokens, i) or extern_c_depths[i]):
            decls[name] = KernelDecl(
                name, None, f'kernel {name!r} is not declared extern "C"; its C++ name is mangled and cannot be looked up'
            )
            continue
        param_tokens = tokens[j + 2 : end - 1]
        if param_tokens in ([], ["void"]):
            decls[name] = KernelDecl(name, (), None)
            continue
        try:
            params = tuple(_param_from_tokens(p, k) for k, p in enumerate(_split_params(param_tokens)))
        except ValueError as e:
            decls[name] = KernelDecl(name, None, str(e))
        else:
            decls[name] = KernelDecl(name, params, None)
    return decls


def _preprocessor_free(source: str) -> str:
    # Directives (with their continuation lines) never declare kernels here, and #pragma or
    # #include lines would otherwise feed stray tokens into the scan.
    return re.sub(r"^[ \t]*#(?:[^\n\\]|\\.)*$", " ", source, flags=re.M | re.S)


def _has_extern_c_prefix(tokens: list[str], i: int) -> bool:
    """True if the declaration that holds tokens[i] starts with `extern "C"`."""
    j = i - 1
    while j >= 0 and tokens[j] not in (";", "{", "}"):
        if tokens[j] == '"C"' and j > 0 and tokens[j - 1] == "extern":
            return True
        j -= 1
    return False


def _extern_c_blocks(tokens: list[str]) -> list[bool]:
    """For each token, whether it lies inside an `extern "C" { ... }` block."""
    inside = [False] * len(tokens)
    stack: list[bool] = []
    for i, t in enumerate(tokens):
        if t == "{":
            stack.append(i >= 2 and tokens[i - 1] == '"C"' and tokens[i - 2] == "extern")
        elif t == "}" and stack:
            stack.pop()
        inside[i] = any(stack)
    return inside
