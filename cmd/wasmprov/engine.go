package main

import (
	"os"

	"github.com/wasmprov/wasmprov/runtime"
)

// engine is the engine the CLI's commands run guests on: $WASMPROV_ENGINE
// (runtime.EngineEnv), else the runtime's default, wazero. The CLI reads the
// variable so one binary built with -tags wasmtime can run either engine;
// the runtime package never does.
func engine() runtime.Engine { return runtime.Engine(os.Getenv(runtime.EngineEnv)) }

// engineOption selects engine().
func engineOption() runtime.Option { return runtime.WithEngine(engine()) }
