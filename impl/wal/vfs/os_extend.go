package vfs

import "os"

// extend grows the file to size bytes if it is shorter.
func extend(f *os.File, size int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() >= size {
		return nil
	}
	return f.Truncate(size)
}
