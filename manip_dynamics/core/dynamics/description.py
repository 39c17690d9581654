"""Robot descriptions from files: URDF as written, or xacro expanded (no ROS needed).

:func:`load_description` returns the text of a file as written when it holds nothing
xacro would change, else the file expanded by the ``xacro`` package (PyPI, the ``xacro``
extra) with arguments (``name:=value``). What xacro changes (:func:`needs_xacro`, the
constructs xacro 2's ``eval_all`` acts on, read with the same non-namespace XML parser,
expat): an element or an attribute whose name has the prefix ``xacro:``; ``${`` or ``$(``
(an expression, a substitution, or their ``$${`` / ``$$(`` escapes) in an attribute value
or in text (CDATA sections excepted); a comment holding ``xacro:eval-comments``. A
declaration ``xmlns:xacro=...`` alone is not one: most URDFs are xacro output and keep
it, and they load without xacro installed. The file name (``.xacro`` or not) plays no
part; ``xacro_args`` given always expand. Where xacro is needed but not installed:
:class:`~manip_dynamics.core.errors.MissingExtraError`, one line ending in
``pip install "manip_dynamics[xacro]"``.

``$(find pkg)`` in a xacro file and ``package://pkg/...`` URIs (:func:`resolve_package_uri`,
used for meshes) are resolved through, in this order:

1. explicit ``package_paths``: each entry either the package directory itself (its name,
   or the ``<name>`` in its ``package.xml``, is the package) or a directory holding package
   directories;
2. ``ROS_PACKAGE_PATH`` (entries as in 1);
3. ``AMENT_PREFIX_PATH``: ``<prefix>/share/<pkg>``.

Whatever cannot be resolved (an include, a ``$(find ...)``, an argument without default,
broken XML) raises :class:`~manip_dynamics.core.errors.URDFError` naming the file and what
is missing; a file that cannot be read raises it too.
"""
from __future__ import annotations

import os
import re
import threading
import xml.etree.ElementTree as ET
import xml.parsers.expat
from pathlib import Path

from ..errors import URDFError
from ..extras import import_extra

_XACRO_LOCK = threading.Lock()     # the xacro package keeps its state in module globals


def _package_name(directory: Path) -> str | None:
    """The ``<name>`` of ``directory/package.xml``, None if there is none readable."""
    try:
        name = ET.parse(directory / "package.xml").getroot().findtext("name")
    except (OSError, ET.ParseError):
        return None
    return name.strip() if name else None


def _search_roots(package_paths) -> list[Path]:
    roots = [Path(os.path.expanduser(str(p))) for p in (package_paths or ())]
    roots += [Path(p) for p in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if p]
    return roots


def find_package(name: str, package_paths=None) -> Path:
    """The directory of package ``name`` (see the module docstring for the search order);
    URDFError listing where it looked if none is found."""
    for root in _search_roots(package_paths):
        if root.is_dir() and (root.name == name or _package_name(root) == name):
            return root
        candidate = root / name
        if candidate.is_dir():
            return candidate
        if root.is_dir():
            for child in sorted(root.iterdir()):
                if child.is_dir() and _package_name(child) == name:
                    return child
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    for prefix in prefixes:
        candidate = Path(prefix) / "share" / name
        if candidate.is_dir():
            return candidate
    raise URDFError(
        f"package {name!r} not found: looked in the package paths "
        f"{[str(p) for p in _search_roots(package_paths)] or '(none)'} and in share/ of "
        f"AMENT_PREFIX_PATH {prefixes or '(unset)'}; pass its directory (--package-path / "
        f"package_paths) or set ROS_PACKAGE_PATH")


def resolve_package_uri(uri: str, package_paths=None, base_dir=None) -> Path:
    """A file path for a URDF resource URI: ``package://pkg/rel``, ``file:///abs`` or a
    path (relative ones against ``base_dir``). URDFError if the package is not found; the
    file itself is not checked."""
    if uri.startswith("package://"):
        pkg, _, rel = uri[len("package://"):].partition("/")
        return find_package(pkg, package_paths) / rel
    if uri.startswith("file://"):
        return Path(uri[len("file://"):])
    path = Path(os.path.expanduser(uri))
    return path if path.is_absolute() or base_dir is None else Path(base_dir) / path


def parse_xacro_args(xacro_args) -> dict[str, str]:
    """``{name: value}`` from a dict, a list of ``name:=value`` strings, or one string of
    them separated by spaces; URDFError naming an entry without ``:=``."""
    if xacro_args is None:
        return {}
    if isinstance(xacro_args, dict):
        return {str(k): str(v) for k, v in xacro_args.items()}
    items = xacro_args.split() if isinstance(xacro_args, str) else list(xacro_args)
    out = {}
    for item in items:
        name, sep, value = str(item).partition(":=")
        if not sep or not name.strip():
            raise URDFError(f"xacro argument {item!r} is not of the form name:=value")
        out[name.strip()] = value
    return out


_SUBSTITUTION = re.compile(r"\$[{(]")     # xacro's lexer: ${expr}, $(ext), $${ / $$( escapes


def needs_xacro(text: str) -> bool:
    """Whether xacro would change the XML ``text`` (module docstring): an element or attribute
    named ``xacro:...``, ``${`` / ``$(`` in an attribute value or text outside CDATA, or
    a comment with ``xacro:eval-comments``. Text that is not well-formed XML: True if it
    holds ``<xacro:``, ``${`` or ``$(`` anywhere (xacro then names the file and the XML
    error), else False (the URDF parser names the error)."""
    parser = xml.parsers.expat.ParserCreate()      # no namespace processing: "xacro:macro"
    found, pending, cdata = [], [], [False]

    def text_ends(*_):
        if pending and _SUBSTITUTION.search("".join(pending)):
            found.append(True)
        pending.clear()

    def start(name, attrs):
        text_ends()
        if name.startswith("xacro:") or any(
                k.startswith("xacro:") or _SUBSTITUTION.search(v) for k, v in attrs.items()):
            found.append(True)

    def characters(data):
        if not cdata[0]:
            pending.append(data)

    def comment(data):
        text_ends()
        if "xacro:eval-comments" in data:
            found.append(True)

    def cdata_starts():
        text_ends()
        cdata[0] = True

    def cdata_ends():
        cdata[0] = False

    parser.StartElementHandler, parser.EndElementHandler = start, text_ends
    parser.CharacterDataHandler, parser.CommentHandler = characters, comment
    parser.StartCdataSectionHandler, parser.EndCdataSectionHandler = cdata_starts, cdata_ends
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError:
        return re.search(r"<xacro:|\$[{(]", text) is not None
    return bool(found)


def _expand_xacro(path: Path, mappings: dict, package_paths) -> str:
    """xacro's expansion of ``path`` with ``$(find)`` going through :func:`find_package`;
    MissingExtraError (one line) if xacro is not installed."""
    xacro = import_extra("xacro", f"the xacro file {str(path)!r}")
    substitution_args = import_extra("xacro.substitution_args", f"the xacro file {str(path)!r}")

    def find(pkg):
        return str(find_package(pkg, package_paths).resolve())

    with _XACRO_LOCK:
        saved = substitution_args._eval_find, substitution_args._eval_dict["find"]
        substitution_args._eval_find = substitution_args._eval_dict["find"] = find
        try:
            doc = xacro.process_file(str(path), mappings=dict(mappings))
            return doc.toprettyxml(indent="  ")
        except URDFError as exc:
            raise URDFError(f"xacro {path}: {exc}") from None
        except Exception as exc:   # XacroException, ExpatError, ArgException, NameError, ...
            what, inner = type(exc).__name__, getattr(exc, "exc", None)
            if isinstance(inner, URDFError):           # our $(find ...) inside xacro's
                detail = str(inner)
            elif isinstance(inner, OSError):
                detail = f"cannot open included file {inner.filename!r}: {inner.strerror}"
            elif what == "ArgException":
                detail = (f"undefined argument {exc}: pass it as {exc}:=VALUE "
                          f"(xacro_args / --xacro-arg)")
            else:
                detail = str(exc) or what
            raise URDFError(f"xacro {path}: {detail}") from None
        finally:
            substitution_args._eval_find, substitution_args._eval_dict["find"] = saved


def load_description(path, xacro_args=None, package_paths=None) -> str:
    """The URDF text of the file at ``path``: read as is, or, when xacro would change it
    (:func:`needs_xacro`) or ``xacro_args`` are given, expanded by xacro with
    ``xacro_args`` (see :func:`parse_xacro_args`). URDFError naming the file and the
    include / package / argument that cannot be resolved; MissingExtraError (one line,
    the ``pip install`` of the ``xacro`` extra) if it needs xacro and xacro is not
    installed."""
    path = Path(os.path.expanduser(str(path))).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise URDFError(f"cannot read {str(path)!r}: "
                        f"{exc.strerror or exc}") from None
    mappings = parse_xacro_args(xacro_args)
    if not (mappings or needs_xacro(text)):
        return text
    return _expand_xacro(path, mappings, package_paths)


def add_arguments(parser, what="--urdf") -> None:
    """Add ``--xacro-arg NAME:=VALUE`` and ``--package-path DIR`` (both repeatable; as
    ``args.xacro_arg`` and ``args.package_path`` lists) to an argparse parser."""
    parser.add_argument("--xacro-arg", action="append", default=[], metavar="NAME:=VALUE",
                        help=f"argument of a xacro {what} (repeatable)")
    parser.add_argument("--package-path", action="append", default=[], metavar="DIR",
                        help="where package:// and $(find pkg) look first (repeatable)")


__all__ = ["load_description", "needs_xacro", "find_package", "resolve_package_uri", "parse_xacro_args",
           "add_arguments"]
