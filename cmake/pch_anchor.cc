// The one translation unit of the PCH targets in cmake/pch.cmake: CMake builds a target's
// precompiled header alongside its sources, so the targets that only own a PCH need a source.
