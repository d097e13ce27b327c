package server

import "github.com/udpstp/udpstp/control"

// ReadKeys builds the server's keys from the -a key and the -K file
// (either may be empty) at start-up; a file that does not load is a
// *KeyFileError. SIGHUP reads the file again through control.KeyReloads,
// which is stricter (a half-written file keeps the keys in use).
func ReadKeys(authKey, keyFile string) (*control.ServerKeys, error) {
	var file *control.KeyFile
	if keyFile != "" {
		f, err := control.LoadKeyFile(keyFile)
		if err != nil {
			return nil, &KeyFileError{err}
		}
		file = f
	}
	return control.NewServerKeys(authKey, file)
}

// KeyFileError is a key file that did not load.
type KeyFileError struct{ err error }

func (e *KeyFileError) Error() string { return e.err.Error() }
func (e *KeyFileError) Unwrap() error { return e.err }
