package runtime

// Version is this host's version, a semantic version without the leading
// "v". A module whose metadata (package runtime/metadata) names a newer
// minHostVersion is refused before it is compiled. Release builds set it
// with -ldflags "-X github.com/wasmprov/wasmprov/runtime.Version=1.2.3";
// it is a variable only for that.
var Version = "0.1.0"
