package registry

// SetReadFile replaces the function that reads a directory provider's
// files, so a test can make a read fail the same way for every user (root
// reads files whatever their mode). Call it before the first load.
func SetReadFile(r *Registry, fn func(string) ([]byte, error)) { r.cfg.readFile = fn }
