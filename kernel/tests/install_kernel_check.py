#!/usr/bin/python3
"""ctest notebook_install_kernel: tools/install_kernel.sh --prefix TMP writes a kernelspec that
jupyter_client finds under the name xcpp17, says it is gradlab's clang-based kernel, and runs the
given xgradlab (checked by starting it and asking for kernel_info)."""

import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main():
    kernel = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="gradlab-install-kernel-") as tmp:
        subprocess.run(["bash", str(ROOT / "tools/install_kernel.sh"), "--prefix", tmp,
                        "--kernel", kernel], check=True)
        os.environ["JUPYTER_PATH"] = str(pathlib.Path(tmp) / "share" / "jupyter")
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import start_new_kernel
        spec = KernelSpecManager().get_kernel_spec("xcpp17")
        print(f"found xcpp17 in {spec.resource_dir}: {spec.display_name!r}, {spec.language}")
        if "gradlab" not in spec.display_name or "clang" not in spec.display_name:
            print("FAIL: the display name does not say it is gradlab's clang-based kernel")
            return 1
        if spec.language != "C++17" or pathlib.Path(spec.argv[0]).resolve() != pathlib.Path(kernel).resolve():
            print(f"FAIL: language {spec.language}, argv {spec.argv}")
            return 1
        km, kc = start_new_kernel(kernel_name="xcpp17", startup_timeout=120)
        try:
            info = kc.kernel_info(reply=True)["content"]
        finally:
            km.shutdown_kernel(now=True)
        print(f"started it: {info['implementation']} {info['implementation_version']}")
        if info["implementation"] != "xgradlab":
            return 1
    print("install_kernel: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
