"""The one compiled part of pyk8s: the protobuf codec's C loop (pyk8s/api/protobuf/_fastpb.c). Everything else
is in pyproject.toml. The extension is optional: where it cannot be built, the Python codec does its work."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pyk8s.api.protobuf._fastpb",
            ["pyk8s/api/protobuf/_fastpb.c"],
            extra_compile_args=["-O3", "-Wall", "-Wno-unused-parameter"],
            optional=True,
        )
    ]
)
