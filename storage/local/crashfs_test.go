package local

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
)

// crashFS is a simulated disk for the power-loss tests: a fileSystem that keeps its files in
// memory and remembers, for every file, what a sync made durable, and for every directory,
// which creations, renames and removals a directory sync made durable. image then builds the
// disk a power loss at that moment could leave behind, which a store is reopened on.
//
// The model is the strict one of Pebble's vfs.NewStrictMem (only synced state survives; a new
// name needs a sync of its directory, not only of the file) with SQLite's crash tests' view of
// unsynced writes: they may reach the disk in any order, whole pages at a time, so a power
// loss keeps any subset of a file's unsynced pages, a later one without an earlier one, and
// its size as last synced or as last set. Syncs are file.Sync and file.Datasync alike (an
// fdatasync writes the size a read needs). Directory entries that changed since the last
// SyncDir of their directory are undone, all of them, a random prefix of them (a journalling
// file system commits them in order) or a random subset (POSIX promises no order).
//
// Every operation that changes the disk counts: crash points are numbered by it (onOp runs
// before operation n changes anything, so an image taken then holds operations 1..n-1).
// Locks are flock's: per open file, shared or exclusive, released by Close.
type crashFS struct {
	mu      sync.Mutex
	cond    *sync.Cond // lock waiters
	root    *memNode
	nextIno uint64
	tmpSeq  int
	now     func() time.Time
	ops     int
	onOp    func(n int) // called before operation n changes the disk, without mu held
}

// memNode is a file or a directory (an inode).
type memNode struct {
	ino   uint64
	dir   bool
	mtime time.Time
	// A file's bytes as the open files see them, and as the last sync left them on disk.
	cur, durable content
	// A directory's entries, as they are and as the last SyncDir left them on disk, and
	// the changes since, in order.
	children map[string]*memNode
	synced   map[string]*memNode
	pending  []dirOp
	// flock state.
	excl   *memFile
	shared map[*memFile]bool
}

// dirOp is a change to a directory's entries not yet made durable: name now names node
// (nil: removed), and from (a rename's old name, if any) names nothing. A rename is one
// change: a power loss keeps it whole or not at all.
type dirOp struct {
	name string
	node *memNode
	from string
}

func newCrashFS(now func() time.Time) *crashFS {
	c := &crashFS{now: now, nextIno: 2}
	c.cond = sync.NewCond(&c.mu)
	c.root = &memNode{ino: 1, dir: true, children: map[string]*memNode{}, synced: map[string]*memNode{}}
	return c
}

// mutate runs fn, which changes the disk, as the next operation: onOp gets its crash point
// first. fn runs with c.mu held and looks up what it changes itself (the hook may have run
// anything in between).
func (c *crashFS) mutate(fn func()) {
	c.mu.Lock()
	c.ops++
	n, hook := c.ops, c.onOp
	c.mu.Unlock()
	if hook != nil {
		hook(n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fn()
}

func (c *crashFS) newNode(dir bool) *memNode {
	n := &memNode{ino: c.nextIno, dir: dir, mtime: c.now()}
	c.nextIno++
	if dir {
		n.children, n.synced = map[string]*memNode{}, map[string]*memNode{}
	}
	return n
}

func notExist(op, name string) error { return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} }

// lookup returns the directory holding name, name's last element, and its node (nil if
// missing). c.mu is held.
func (c *crashFS) lookup(op, name string) (*memNode, string, *memNode, error) {
	name = filepath.ToSlash(name) // the store joins with filepath, \ on Windows
	if !path.IsAbs(name) {
		return nil, "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	name = path.Clean(name)
	if name == "/" {
		return nil, "", c.root, nil
	}
	dir := c.root
	parts := strings.Split(name[1:], "/")
	for _, p := range parts[:len(parts)-1] {
		next := dir.children[p]
		if next == nil || !next.dir {
			return nil, "", nil, notExist(op, name)
		}
		dir = next
	}
	base := parts[len(parts)-1]
	return dir, base, dir.children[base], nil
}

// link makes dir's entry base name node (nil: removes it), pending until dir is synced.
func (dir *memNode) link(base string, node *memNode) {
	op := dirOp{name: base, node: node}
	op.apply(dir.children)
	dir.pending = append(dir.pending, op)
}

func (op dirOp) apply(entries map[string]*memNode) {
	if op.from != "" {
		delete(entries, op.from)
	}
	if op.node == nil {
		delete(entries, op.name)
	} else {
		entries[op.name] = op.node
	}
}

func (c *crashFS) OpenFile(name string, flag int, perm os.FileMode) (file, error) {
	c.mu.Lock()
	dir, base, n, err := c.lookup("open", name)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if n == nil {
		if flag&os.O_CREATE == 0 || dir == nil {
			return nil, notExist("open", name)
		}
		c.mutate(func() {
			if n = dir.children[base]; n == nil {
				n = c.newNode(false)
				dir.link(base, n)
			}
		})
	} else if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrExist}
	}
	if n.dir && flag&(os.O_RDWR|os.O_WRONLY) != 0 {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("is a directory")}
	}
	return &memFile{c: c, n: n, name: path.Clean(filepath.ToSlash(name)), flag: flag}, nil
}

func (c *crashFS) CreateTemp(dir, pattern string) (file, error) {
	c.mu.Lock()
	c.tmpSeq++
	seq := c.tmpSeq
	c.mu.Unlock()
	prefix, suffix, _ := strings.Cut(pattern, "*")
	return c.OpenFile(path.Join(filepath.ToSlash(dir), fmt.Sprintf("%s%d%s", prefix, seq, suffix)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
}

func (c *crashFS) Stat(name string) (os.FileInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, base, n, err := c.lookup("stat", name)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, notExist("stat", name)
	}
	return n.info(base), nil
}

func (c *crashFS) ReadDir(name string) ([]os.DirEntry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, n, err := c.lookup("readdir", name)
	if err != nil {
		return nil, err
	}
	if n == nil || !n.dir {
		return nil, notExist("readdir", name)
	}
	out := make([]os.DirEntry, 0, len(n.children))
	for base, ch := range n.children {
		out = append(out, fs.FileInfoToDirEntry(ch.info(base)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (c *crashFS) Rename(oldpath, newpath string) error {
	c.mu.Lock()
	od, ob, n, err := c.lookup("rename", oldpath)
	if err == nil && n == nil {
		err = notExist("rename", oldpath)
	}
	var nd *memNode
	var nb string
	if err == nil {
		nd, nb, _, err = c.lookup("rename", newpath)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if od != nd || n.dir {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errors.New("crashFS renames files within a directory only")}
	}
	c.mutate(func() {
		op := dirOp{name: nb, node: n, from: ob}
		op.apply(od.children)
		od.pending = append(od.pending, op)
	})
	return nil
}

func (c *crashFS) Remove(name string) error {
	c.mu.Lock()
	dir, base, n, err := c.lookup("remove", name)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if n == nil || dir == nil {
		return notExist("remove", name)
	}
	if n.dir && len(n.children) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: errors.New("directory not empty")}
	}
	c.mutate(func() { dir.link(base, nil) })
	return nil
}

func (c *crashFS) MkdirAll(name string, perm os.FileMode) error {
	name = path.Clean(filepath.ToSlash(name))
	if name == "/" {
		return nil
	}
	if err := c.MkdirAll(path.Dir(name), perm); err != nil {
		return err
	}
	c.mu.Lock()
	dir, base, n, err := c.lookup("mkdir", name)
	c.mu.Unlock()
	switch {
	case err != nil:
		return err
	case n != nil && n.dir:
		return nil
	case n != nil:
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
	}
	c.mutate(func() { dir.link(base, c.newNode(true)) })
	return nil
}

func (c *crashFS) SyncDir(name string) error {
	c.mu.Lock()
	_, _, n, err := c.lookup("sync", name)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if n == nil || !n.dir {
		return notExist("sync", name)
	}
	c.mutate(func() { n.synced, n.pending = mapsClone(n.children), nil })
	return nil
}

func sortedNames(m map[string]*memNode) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func mapsClone(m map[string]*memNode) map[string]*memNode {
	out := make(map[string]*memNode, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (c *crashFS) SameFile(a, b os.FileInfo) bool {
	x, ok1 := a.(memInfo)
	y, ok2 := b.(memInfo)
	return ok1 && ok2 && x.ino == y.ino
}

// memInfo is a memNode's os.FileInfo; its Sys() is itself, an inoer.
type memInfo struct {
	name  string
	size  int64
	dir   bool
	mtime time.Time
	ino   uint64
}

func (n *memNode) info(base string) memInfo {
	return memInfo{name: base, size: n.cur.size, dir: n.dir, mtime: n.mtime, ino: n.ino}
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mtime }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return i }
func (i memInfo) Ino() uint64        { return i.ino }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return fs.ModeDir | 0o700
	}
	return 0o600
}

// memFile is an open file of a crashFS.
type memFile struct {
	c      *crashFS
	n      *memNode
	name   string
	flag   int
	off    int64 // Write's position (without O_APPEND)
	closed bool
}

var errClosedFile = errors.New("file already closed")

func (f *memFile) Name() string { return f.name }

// check says why f cannot be used for op; f.c.mu is held.
func (f *memFile) check(op string, write bool) error {
	switch {
	case f.closed:
		return &fs.PathError{Op: op, Path: f.name, Err: errClosedFile}
	case write && f.flag&(os.O_RDWR|os.O_WRONLY) == 0:
		return &fs.PathError{Op: op, Path: f.name, Err: errors.New("file opened read-only")}
	}
	return nil
}

func (f *memFile) ReadAt(b []byte, off int64) (int, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	n := f.n.cur.readAt(b, off)
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// usable is check under f.c.mu.
func (f *memFile) usable(op string, write bool) error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	return f.check(op, write)
}

func (f *memFile) WriteAt(b []byte, off int64) (int, error) {
	if err := f.usable("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, errors.New("invalid use of WriteAt on file opened with O_APPEND")
	}
	f.c.mutate(func() {
		f.n.cur.writeAt(b, off)
		f.n.mtime = f.c.now()
	})
	return len(b), nil
}

func (f *memFile) Write(b []byte) (int, error) {
	if err := f.usable("write", true); err != nil {
		return 0, err
	}
	f.c.mutate(func() {
		off := f.off
		if f.flag&os.O_APPEND != 0 {
			off = f.n.cur.size
		}
		f.n.cur.writeAt(b, off)
		f.off = off + int64(len(b))
		f.n.mtime = f.c.now()
	})
	return len(b), nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.usable("truncate", true); err != nil {
		return err
	}
	f.c.mutate(func() {
		f.n.cur.truncate(size)
		f.n.mtime = f.c.now()
	})
	return nil
}

func (f *memFile) Sync() error {
	if err := f.usable("sync", false); err != nil {
		return err
	}
	f.c.mutate(func() { f.n.durable = f.n.cur.clone() })
	return nil
}

func (f *memFile) Datasync() error { return f.Sync() }

func (f *memFile) Stat() (os.FileInfo, error) {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.n.info(path.Base(f.name)), nil
}

func (f *memFile) Lock(exclusive, wait bool) error {
	c := f.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := f.check("lock", false); err != nil {
		return err
	}
	f.unlockLocked()
	n := f.n
	for {
		free := n.excl == nil && (!exclusive || len(n.shared) == 0)
		if free {
			if exclusive {
				n.excl = f
			} else {
				if n.shared == nil {
					n.shared = map[*memFile]bool{}
				}
				n.shared[f] = true
			}
			return nil
		}
		if !wait {
			return errLockBusy
		}
		c.cond.Wait()
		if f.closed {
			return &fs.PathError{Op: "lock", Path: f.name, Err: errClosedFile}
		}
	}
}

// unlockLocked drops f's lock; c.mu is held.
func (f *memFile) unlockLocked() {
	n := f.n
	if n.excl == f {
		n.excl = nil
	}
	delete(n.shared, f)
	f.c.cond.Broadcast()
}

func (f *memFile) Unlock() error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	f.unlockLocked()
	return nil
}

func (f *memFile) Close() error {
	f.c.mu.Lock()
	defer f.c.mu.Unlock()
	if f.closed {
		return &fs.PathError{Op: "close", Path: f.name, Err: errClosedFile}
	}
	f.unlockLocked()
	f.closed = true
	return nil
}

// fileKey is a digest of a file's bytes (0: no such file).
func (c *crashFS) fileKey(name string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, n, err := c.lookup("key", name)
	if err != nil || n == nil || n.dir {
		return 0
	}
	d := xxhash.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n.cur.size))
	d.Write(b[:])
	for i, p := range n.cur.pages {
		if p != nil {
			binary.LittleEndian.PutUint64(b[:], uint64(i))
			d.Write(b[:])
			d.Write(p[:])
		}
	}
	return d.Sum64()
}

// files lists every file under dir with its size (for failure messages).
func (c *crashFS) files(dir string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	var walk func(p string, n *memNode)
	walk = func(p string, n *memNode) {
		for _, k := range sortedNames(n.children) {
			ch := n.children[k]
			if ch.dir {
				walk(p+"/"+k, ch)
			} else {
				fmt.Fprintf(&b, "  %s/%s %d bytes (ino %d)\n", p, k, ch.cur.size, ch.ino)
			}
		}
	}
	if _, _, n, err := c.lookup("walk", dir); err == nil && n != nil {
		walk(strings.TrimSuffix(dir, "/"), n)
	}
	return b.String()
}
