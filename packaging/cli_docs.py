#!/usr/bin/env python3
"""Documents generated from the command line's own help, so they cannot
drift from it:

  cli_docs.py completion EHPROF OUT   bash completion: the commands `ehprof
                                      --help` lists, each command's options
                                      from `ehprof COMMAND --help`
  cli_docs.py man-include EHPROF OUT  help2man include file: a section with
                                      every command's full --help

Fails, naming the command, when the help cannot be read or lists nothing."""
import re
import subprocess
import sys

# "  -F,--freq HZ   text" or "  --no-table-cache   text" (CLI11's layout).
OPTION = re.compile(r"^  (-[\w-]+(?:,--?[\w-]+)*)(?: ([^ ].*?))?(?:  +|$)")
# "  record         sample CPU stacks ..." under "commands:".
COMMAND = re.compile(r"^  ([a-z][a-z-]*)\b")
# Values that are files or directories: complete paths for them.
PATH_VALUES = re.compile(r"FILE|DIR|PATH|CMD|COMMAND")


def run_help(ehprof, *args):
    r = subprocess.run([ehprof, *args, "--help"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        sys.exit(f"cli_docs.py: '{ehprof} {' '.join(args)} --help' failed "
                 f"(exit {r.returncode}): {r.stderr.strip()}")
    return r.stdout


def commands(ehprof):
    out, in_list = [], False
    for line in run_help(ehprof).splitlines():
        if line.strip() == "commands:":
            in_list = True
        elif in_list and not line.strip():
            break
        elif in_list and (m := COMMAND.match(line)):
            out.append(m.group(1))
    if not out:
        sys.exit(f"cli_docs.py: '{ehprof} --help' lists no commands")
    return out


def options(help_text):
    """(names, value) of each option; value is '' for flags."""
    out = []
    for line in help_text.splitlines():
        if m := OPTION.match(line):
            out.append((m.group(1).split(","), m.group(2) or ""))
    return out


def completion(ehprof):
    cmds = commands(ehprof)
    cases, path_opts = [], set()
    for cmd in cmds:
        opts = options(run_help(ehprof, cmd))
        if not opts:
            sys.exit(f"cli_docs.py: '{ehprof} {cmd} --help' lists no options")
        names = [n for names, _ in opts for n in names]
        path_opts.update(n for names, value in opts if PATH_VALUES.search(value) for n in names)
        cases.append(f"    {cmd}) opts='{' '.join(names)}' ;;")
    path_case = "|".join(sorted(path_opts)) or "--no-such-option"
    return f"""# bash completion for ehprof, generated from its --help by packaging/cli_docs.py
_ehprof() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev=${{COMP_WORDS[COMP_CWORD-1]}} opts
  if ((COMP_CWORD == 1)); then
    COMPREPLY=($(compgen -W '{' '.join(cmds)} --help --version' -- "$cur"))
    return
  fi
  case $prev in
    {path_case}) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  case ${{COMP_WORDS[1]}} in
{chr(10).join(cases)}
    *) return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}}
complete -F _ehprof ehprof
"""


def roff_literal(text):
    lines = []
    for line in text.rstrip("\n").splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def man_include(ehprof):
    parts = ["[COMMANDS]"]
    for cmd in commands(ehprof):
        parts += [f'.SS "ehprof {cmd}"', ".nf", roff_literal(run_help(ehprof, cmd)), ".fi"]
    parts += ["[SEE ALSO]", "perf(1), perf-record(1), readelf(1)"]
    return "\n".join(parts) + "\n"


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("completion", "man-include"):
        sys.exit("usage: cli_docs.py completion|man-include EHPROF OUT")
    kind, ehprof, out = sys.argv[1:]
    text = completion(ehprof) if kind == "completion" else man_include(ehprof)
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
