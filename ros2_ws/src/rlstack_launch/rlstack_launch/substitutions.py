"""``$(...)`` substitutions of the ROS 2 launch frontend, and ament-index lookups.

Only the substitutions listed in :data:`SUPPORTED` are understood. Anything else is an
error rather than being left in the string, because a literal ``$(eval ...)`` passed to a
node would fail much later and far away from the launch file that caused it.
"""

from __future__ import annotations

import os
import shlex
import warnings
from dataclasses import dataclass, field
from typing import Callable, List, Mapping, Optional, Set

from .errors import EntryError, SkipEntry

#: Substitutions this runner evaluates, in the order they are listed in error messages.
SUPPORTED = (
    "var",
    "env",
    "find-pkg-share",
    "find-pkg-prefix",
    "dirname",
    "filename",
)


@dataclass
class SubstitutionContext:
    """What a substitution may read: the current launch file and its launch arguments.

    Attributes:
        launch_file: absolute path of the launch file being read (``$(filename)``).
        variables: launch arguments and ``let`` values visible at this point.
        missing: required arguments already reported as not given; a ``$(var)`` of one of
            them skips the entry silently instead of repeating the error.
        used: receives every variable name looked up (to tell typos from real arguments).
        warn: receives non-fatal remarks (portability notes).
    """

    launch_file: str
    variables: Mapping[str, str]
    missing: Set[str] = field(default_factory=set)
    used: Set[str] = field(default_factory=set)
    warn: Optional[Callable[[str], None]] = None


def package_prefix(package: str) -> str:
    """Return the install prefix of ``package`` from the ament index.

    Raises:
        EntryError: the package is not in the index (or the name is not a valid one).
    """
    # Imported here so that merely importing this module never needs the ament index.
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        return get_package_prefix(package)
    except PackageNotFoundError:
        searched = os.environ.get("AMENT_PREFIX_PATH", "")
        raise EntryError(
            f"package '{package}' not found in the ament index",
            "build it and source its workspace: in rlstack, 'make setup' then 'source env.sh'; "
            f"AMENT_PREFIX_PATH={searched}",
        ) from None
    except ValueError:
        raise EntryError(
            f"'{package}' is not a valid package name",
            "package names are letters, digits, '_' and '-', at least 2 characters",
        ) from None
    except OSError:
        # ament_index_python raises EnvironmentError when AMENT_PREFIX_PATH is unset.
        raise EntryError(
            f"cannot look up package '{package}': AMENT_PREFIX_PATH is not set",
            "source your ROS 2 / workspace setup script first",
        ) from None


def package_share(package: str) -> str:
    """Return the share directory of ``package`` (``<prefix>/share/<package>``).

    Raises:
        EntryError: the package is unknown or its share directory does not exist.
    """
    from ament_index_python.packages import get_package_share_directory

    package_prefix(package)  # for its clear error messages
    with warnings.catch_warnings():
        # ament_index_python warns on stderr when the directory is missing; this raises instead.
        warnings.simplefilter("ignore")
        share = get_package_share_directory(package)
    if not os.path.isdir(share):
        raise EntryError(
            f"package '{package}' has no share directory {share}",
            "rebuild and reinstall the package",
        )
    return share


def substitute(text: str, ctx: SubstitutionContext) -> str:
    """Return ``text`` with every ``$(name args...)`` replaced by its value.

    Arguments inside a substitution are split like a shell would (quotes group words).
    Nested substitutions (``$(var $(var x))``) are not supported.

    Raises:
        EntryError: unknown substitution, bad arguments, or a value that cannot be found.
        SkipEntry: a ``$(var)`` of a required argument that was already reported missing.
    """
    out: List[str] = []
    pos = 0
    while True:
        start = text.find("$(", pos)
        if start < 0:
            out.append(text[pos:])
            break
        out.append(text[pos:start])
        end = text.find(")", start + 2)
        if end < 0:
            raise EntryError(
                f"unterminated substitution in {text!r}", "close it with ')'"
            )
        inner = text[start + 2 : end]
        if "$(" in inner:
            raise EntryError(
                f"nested substitution in {text!r} is not supported",
                "compute the inner value with a 'let' entry first",
            )
        out.append(_evaluate(inner, ctx))
        pos = end + 1
    return "".join(out)


def _evaluate(inner: str, ctx: SubstitutionContext) -> str:
    """Evaluate the text between ``$(`` and ``)``."""
    expr = f"$({inner})"
    try:
        words = shlex.split(inner)
    except ValueError as exc:
        raise EntryError(f"cannot parse substitution {expr}: {exc}", "check the quotes") from None
    if not words:
        raise EntryError(f"empty substitution {expr}", "write e.g. $(var NAME)")
    kind, args = words[0], words[1:]

    def need(lo: int, hi: int, usage: str) -> None:
        if not lo <= len(args) <= hi:
            raise EntryError(f"wrong number of arguments in {expr}", f"usage: {usage}")

    if kind == "var":
        # launch/substitutions/launch_configuration.py: $(var NAME) or $(var NAME DEFAULT)
        need(1, 2, "$(var NAME) or $(var NAME DEFAULT)")
        name = args[0]
        ctx.used.add(name)
        if name not in ctx.variables and len(args) == 2:
            return args[1]
        if name in ctx.missing:
            raise SkipEntry()
        if name not in ctx.variables:
            raise EntryError(
                f"launch argument '{name}' is not set",
                f"declare it with an 'arg' entry before it is used, or pass {name}:=VALUE",
            )
        return ctx.variables[name]
    if kind == "env":
        need(1, 2, "$(env NAME) or $(env NAME DEFAULT)")
        value = os.environ.get(args[0], args[1] if len(args) == 2 else None)
        if value is None:
            raise EntryError(
                f"environment variable '{args[0]}' is not set",
                f"export {args[0]}, or give a default: $(env {args[0]} DEFAULT)",
            )
        return value
    if kind == "optenv":
        # A ROS 1 substitution: ros2 launch stops with "Unknown substitution: optenv".
        default = args[1] if len(args) == 2 else "''"
        raise EntryError(
            f"Unknown substitution: optenv (in {expr}; ros2 launch does not know it either)",
            f"write $(env {args[0] if args else 'NAME'} {default}) instead",
        )
    if kind == "find-pkg-share":
        need(1, 1, "$(find-pkg-share PACKAGE)")
        return package_share(args[0])
    if kind == "find-pkg-prefix":
        need(1, 1, "$(find-pkg-prefix PACKAGE)")
        return package_prefix(args[0])
    if kind == "dirname":
        need(0, 0, "$(dirname)")
        return os.path.dirname(ctx.launch_file)
    if kind == "filename":
        need(0, 0, "$(filename)")
        return ctx.launch_file
    raise EntryError(
        f"substitution '$({kind} ...)' is not supported",
        "supported: " + ", ".join(f"$({s})" for s in SUPPORTED),
    )
