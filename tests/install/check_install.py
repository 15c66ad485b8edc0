#!/usr/bin/env python3
"""End-to-end checks of the installed layout (ctest install_layout, package_deb).

    check_install.py --build-dir BUILD --build-type TYPE   # cmake --install, then check
    check_install.py --build-dir BUILD --deb 0|1 [--arch A] # cpack -G DEB, then compare

The subcommand tree and the flags are read from the installed binary's --help, so these
checks follow the CLI as it grows: every subcommand must be in the man page and be
offered by the bash completion (run for real in bash), zsh's and fish's scripts must name
every subcommand and diagnose's flags, and --version must say the commit, the build type
and the knowledge base's entry count (equal to `kb list --format json`).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "/opt/firstfault-test"
# The values diagnose --format takes (src/app/main.cc); the completions must offer each.
DIAGNOSE_FORMATS = {"text", "json", "html", "markdown", "md", "vimgrep", "sarif"}
LAYOUT = [
    "bin/firstfault",
    "share/man/man1/firstfault.1",
    "share/bash-completion/completions/firstfault",
    "share/zsh/site-functions/_firstfault",
    "share/fish/vendor_completions.d/firstfault.fish",
    "share/doc/firstfault/README.md",
    "share/doc/firstfault/ARCHITECTURE.md",
] + ["share/doc/firstfault/docs/" + f for f in sorted(os.listdir(os.path.join(SOURCE_DIR, "docs")))]

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)
    return ok


def run(cmd, **kw):
    env = dict(os.environ, NO_COLOR="1", FIRSTFAULT_CACHE_DIR=kw.pop("cache", ""))
    env.update(kw.pop("env", {}))
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, **kw)


def help_sections(text):
    """{'Options': [term, ...], 'Subcommands': [...]} from a CLI11 help text."""
    sections, current = {}, None
    for line in text.split("\n"):
        if not line.strip():
            current = None
        elif not line.startswith(" ") and line.rstrip().endswith(":"):
            current = sections.setdefault(line.rstrip()[:-1], [])
        elif current is not None and line.startswith("  ") and not line.startswith("   "):
            current.append(re.split(r"\s{2,}", line.strip())[0])
    return sections


def tree(binary, path=()):
    """Every subcommand path, depth first, with the flags of each: {('kb', 'list'): [...]}."""
    out = run([binary, *path, "--help"])
    sections = help_sections(out.stdout)
    flags = []
    for term in sections.get("Options", []):
        flags += [n for n in term.split(" ")[0].split(",") if n.startswith("-")]
    result = {tuple(path): flags}
    for term in sections.get("Subcommands", []):
        result.update(tree(binary, (*path, term.split(" ")[0])))
    return result


def bash_complete(script, words):
    """COMPREPLY of the bash completion for the command line `words` (the last is the word
    being completed)."""
    line = " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)
    prog = (f"source '{script}'\nCOMP_WORDS=({line})\nCOMP_CWORD={len(words) - 1}\n"
            "_firstfault\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    p = run(["bash", "--norc", "--noprofile", "-c", prog], cwd=tempfile.gettempdir())
    if p.returncode != 0:
        check(False, f"bash completion of {words} ran: {p.stderr.strip()}")
    return set(p.stdout.split())


def check_layout(build_dir, build_type):
    tmp = tempfile.mkdtemp(prefix="ff-install-")
    try:
        dest = os.path.join(tmp, "dest")
        p = run(["cmake", "--install", build_dir, "--prefix", PREFIX], env={"DESTDIR": dest})
        if not check(p.returncode == 0, f"cmake --install {build_dir} --prefix {PREFIX} with DESTDIR"):
            print(p.stdout, p.stderr)
            return
        root = dest + PREFIX
        for rel in LAYOUT:
            check(os.path.isfile(os.path.join(root, rel)), f"installed {rel}")
        binary = os.path.join(root, "bin/firstfault")
        check(os.access(binary, os.X_OK), "bin/firstfault is executable")
        installed = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)
        check(installed == sorted(LAYOUT), f"nothing else installed (got {installed})")

        commands = tree(binary)
        paths = [p for p in commands if p]
        check(len(paths) >= 9 and ("diagnose",) in commands and ("kb", "list") in commands,
              f"the help lists the subcommands ({' / '.join(' '.join(p) for p in paths)})")

        man = open(os.path.join(root, "share/man/man1/firstfault.1"), encoding="utf-8").read()
        for path in paths:
            # roff writes a name's hyphens as \- (slurm-epilog: slurm\-epilog)
            title = " ".join(path).replace("-", "\\-")
            check(f'.SS "firstfault {title}"' in man, f"man page has a section for `firstfault {' '.join(path)}`")
        check(".TH FIRSTFAULT 1" in man and ".SH EXIT STATUS" in man, "man page header and exit status")
        if shutil.which("man"):
            p = run(["man", "-l", "--warnings", os.path.join(root, "share/man/man1/firstfault.1")],
                    env={"MANWIDTH": "80", "MAN_KEEP_STDERR": "1"})
            check(p.returncode == 0 and "firstfault diagnose" in p.stdout, "man -l renders the page")

        share = os.path.join(root, "share")
        bash = os.path.join(share, "bash-completion/completions/firstfault")
        check(run([binary, "completions", "bash"]).stdout == open(bash).read(),
              "the installed bash completion is `firstfault completions bash`")
        for path, flags in commands.items():
            children = {p[len(path)] for p in commands if len(p) == len(path) + 1 and p[:len(path)] == path}
            if children:
                got = bash_complete(bash, ["firstfault", *path, ""])
                check(children <= got, f"bash completes the subcommands of `firstfault {' '.join(path)}` "
                      f"(missing {sorted(children - got)})")
        got = bash_complete(bash, ["firstfault", "diagnose", "-"])
        flags = set(commands[("diagnose",)])
        check(flags <= got, f"bash completes diagnose's flags (missing {sorted(flags - got)})")
        check(bash_complete(bash, ["firstfault", "diagnose", "--format", ""]) == DIAGNOSE_FORMATS,
              "bash completes diagnose --format with its formats")
        check("diagnose" in bash_complete(bash, ["firstfault", "--kb", "somewhere", "diag"]),
              "bash steps over an option's value (--kb DIR diag -> diagnose)")
        check("check" in bash_complete(bash, ["firstfault", "kb", "ch"]), "bash completes `kb ch` to check")

        for shell, rel in (("zsh", "zsh/site-functions/_firstfault"), ("fish", "fish/vendor_completions.d/firstfault.fish")):
            text = open(os.path.join(share, rel)).read()
            check(text == run([binary, "completions", shell]).stdout, f"the installed {shell} completion is current")
            words = {w.lstrip("-") for w in re.findall(r"[\w.-]+", text)}
            names = {p[-1] for p in paths}
            check(names <= words, f"{shell} completion names every subcommand (missing {sorted(names - words)})")
            long_short = {f.lstrip("-") for f in commands[("diagnose",)]}
            check(long_short <= words, f"{shell} completion names diagnose's flags (missing {sorted(long_short - words)})")
            if shutil.which(shell):
                p = run([shell, "-n", os.path.join(share, rel)])
                check(p.returncode == 0, f"{shell} -n accepts the completion {p.stderr.strip()}")
        if shutil.which("fish"):
            prog = f"source {os.path.join(share, 'fish/vendor_completions.d/firstfault.fish')}; complete -C 'firstfault kb l'"
            got = {l.split("\t")[0] for l in run(["fish", "--no-config", "-c", prog]).stdout.split("\n")}
            check({"list", "literals"} <= got, "fish completes `firstfault kb l` to list, literals")
            prog = f"source {os.path.join(share, 'fish/vendor_completions.d/firstfault.fish')}; complete -C 'firstfault diagnose --format '"
            got = {l.split("\t")[0] for l in run(["fish", "--no-config", "-c", prog]).stdout.split("\n")} - {""}
            check(got == DIAGNOSE_FORMATS, f"fish completes diagnose --format with text, json (got {sorted(got)})")

        version = run([binary, "--version"])
        lines = version.stdout.split("\n")
        check(version.returncode == 0 and re.fullmatch(r"firstfault \d+\.\d+\.\d+", lines[0]) is not None,
              f"--version's first line is `firstfault X.Y.Z` ({lines[0]!r})")
        check(run([binary, "-V"]).stdout == version.stdout, "-V prints the same")
        check(re.search(r"^commit: ([0-9a-f]{7,40}(-dirty)?|unknown)$", version.stdout, re.M) is not None,
              "--version says the commit")
        check(re.search(rf"^build: {re.escape(build_type)}\b", version.stdout, re.M) is not None,
              f"--version says the build type {build_type}")
        m = re.search(r"^knowledge base: (\d+) entries, hash [0-9a-f]{16}", version.stdout, re.M)
        listed = len(json.loads(run([binary, "--no-cache", "kb", "list", "--format", "json"]).stdout))
        check(m is not None and int(m.group(1)) == listed,
              f"--version says the KB entry count ({m.group(1) if m else None}) and hash; kb list has {listed}")
        print(version.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_deb(build_dir, portable, arch=None):
    tmp = tempfile.mkdtemp(prefix="ff-deb-")
    try:
        p = run(["cpack", "-G", "DEB", "--config", os.path.join(build_dir, "CPackConfig.cmake"), "-B", tmp])
        debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
        if not check(p.returncode == 0 and len(debs) == 1, f"cpack -G DEB made one .deb ({debs})"):
            print(p.stdout, p.stderr)
            return
        deb = os.path.join(tmp, debs[0])
        listing = run(["dpkg-deb", "-c", deb]).stdout.split("\n")
        files = sorted(l.split()[-1][len("./usr/"):] for l in listing if l.startswith("-"))
        check(files == sorted(LAYOUT), f"the .deb holds the `make install` files under /usr (got {files})")
        fields = {k: run(["dpkg-deb", "-f", deb, k]).stdout.strip()
                  for k in ("Package", "Maintainer", "Depends", "Architecture")}
        print(fields)
        check(fields["Package"] == "firstfault" and "@" in fields["Maintainer"], "package name and maintainer")
        if arch:
            check(fields["Architecture"] == arch, f"the .deb is for {arch} (Architecture: {fields['Architecture']})")
        if portable:
            deps = [d.strip() for d in fields["Depends"].split(",") if d.strip()]
            check(len(deps) == 1 and deps[0].startswith("libc6"), f"the portable .deb depends on libc6 only ({deps})")
            # No newer glibc than the binary's floor (issue 35: 2.28), so that it installs
            # where it runs (dpkg-shlibdeps alone said 2.34).
            m = re.match(r"libc6 \(>= (\d+)\.(\d+)\)", deps[0]) if deps else None
            check(m is not None and (int(m.group(1)), int(m.group(2))) <= (2, 28),
                  f"the portable .deb asks libc6 2.28 at most ({deps})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--build-type", default="")
    ap.add_argument("--deb", choices=["0", "1"])
    ap.add_argument("--arch", help="the .deb's Architecture (amd64, arm64)")
    a = ap.parse_args()
    if a.deb is not None:
        check_deb(a.build_dir, a.deb == "1", a.arch)
    else:
        check_layout(a.build_dir, a.build_type)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
