//go:build !linux

package mmapmem

import "github.com/tetratelabs/wazero/experimental"

// NewImage fails: memory images need Linux's sealed memfds.
func NewImage([]byte) (*Image, error) { return nil, ErrUnsupported }

// Close does nothing: there is no image to close.
func (im *Image) Close() error { return nil }

func mapImage(experimental.LinearMemory, *Image) error { return ErrUnsupported }

func readImage(*Image, []byte) error { return ErrUnsupported }
