// swift-tools-version:5.9
// weida for Swift: the UniFFI-generated module (Sources/Weida/weida_uniffi.swift and the C
// header and module map in Sources/weida_uniffiFFI, both committed; ./dev swift regenerates them
// and fails if they drifted) and the idiomatic layer over it (Sources/Weida/Weida.swift), one
// module `Weida`. The library it links, libweida_uniffi.so, is the cargo build of
// kotlin-swift/uniffi: ./dev swift (run.sh) passes its folder with -Xlinker -L and an rpath.
import PackageDescription

let package = Package(
    name: "Weida",
    products: [
        .library(name: "Weida", targets: ["Weida"]),
        .executable(name: "WeidaConformanceAgent", targets: ["WeidaConformanceAgent"]),
        .executable(name: "WeidaBenchWorker", targets: ["WeidaBenchWorker"]),
    ],
    targets: [
        .systemLibrary(name: "weida_uniffiFFI"),
        // The fast lane's C functions, which libweida_uniffi exports beside UniFFI's
        // (Sources/weida_fastFFI/weida_fast.h, by hand; FastLane.swift calls them).
        .systemLibrary(name: "weida_fastFFI"),
        .target(
            name: "Weida",
            dependencies: ["weida_uniffiFFI", "weida_fastFFI"],
            linkerSettings: [.linkedLibrary("weida_uniffi")]
        ),
        .testTarget(name: "WeidaTests", dependencies: ["Weida"]),
        // The conformance agent (conformance/README.md; kotlin-swift/swift/agent.sh runs it):
        // the suite's line protocol over the `Weida` API, no part of the library.
        .executableTarget(name: "WeidaConformanceAgent", dependencies: ["Weida"]),
        // The benchmark suite's Swift worker (bench/README.md, "The Swift rows";
        // kotlin-swift/swift/bench-worker.sh runs it), no part of the library either.
        .executableTarget(name: "WeidaBenchWorker", dependencies: ["Weida"]),
    ]
)
