package tlsauth

import (
	"os"
	"syscall"
	"time"
)

// stamp is what a stat says of a file: where it is (device, inode), its
// size, its modification and change times. A rename over it, a rewrite in
// place, a chmod or a touch each change some of them; only within the file
// system's timestamp granularity can a change keep the stamp, which is
// why a recent change time is checked by content (racy).
type stamp struct {
	dev, ino, size uint64
	mtime, ctime   int64
}

func statFile(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stamp{size: uint64(fi.Size()), mtime: fi.ModTime().UnixNano()}, nil
	}
	return stamp{dev: uint64(st.Dev), ino: st.Ino, size: uint64(st.Size), mtime: fi.ModTime().UnixNano(),
		ctime: time.Unix(st.Ctim.Sec, st.Ctim.Nsec).UnixNano()}, nil
}

// racy: a change made at or after readAt could have kept the stamp (its
// change time within racyWindow of the moment the content was read).
func (s stamp) racy(readAt time.Time) bool {
	return s.ctime == 0 || s.ctime >= readAt.Add(-racyWindow).UnixNano()
}
