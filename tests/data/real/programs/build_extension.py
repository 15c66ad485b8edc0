# What torch.utils.cpp_extension does for a JIT-built extension: run ninja -v, and turn
# its failure into "Error building extension".
import subprocess, sys
def _run_ninja_build(build_directory, verbose, error_prefix):
    command = ['ninja', '-v']
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        subprocess.run(command, stdout=None if verbose else subprocess.PIPE, stderr=subprocess.STDOUT, cwd=build_directory, check=True)
    except subprocess.CalledProcessError as e:
        message = error_prefix
        raise RuntimeError(message) from e
_run_ninja_build('.', True, "Error building extension '" + sys.argv[1] + "'")
