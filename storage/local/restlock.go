package local

import (
	"errors"
	"io/fs"
	"sort"
)

// A reader that leaves a session at rest does not remove its lock file at once: the sealer
// removes it once no call of this process has read the session for IdleSeal, and Close removes
// what is left. Creating and removing the file are the two directory changes of a read (an
// inode made and freed, each through the file system's journal): on a full resume of 2,000
// messages, ten pages read one after the other, they were about a tenth of what the client
// waited for (docs/BENCHMARKS.md). A lock file that stays a while changes nothing for other
// processes: every locker checks, after locking, that the path still names the file it
// locked (lockPath, tryLock), whether the file was just made or has been there for seconds.
// A process killed before it removed them leaves lock files behind, as every process did
// before sessions at rest had none; the session's next call of this build removes them.

// deferRest reports whether readers leave lock files to the sealer: only where lock files go
// at all, and only while IdleSeal is not negative (the sealer's loop then runs and rests idle
// sessions); not during Open (reconcile reads before the sealer exists).
func (z *sealer) deferRest() bool {
	return z != nil && removeRestingLocks && z.s.opts.IdleSeal >= 0
}

// maxResting bounds how many lock files readers leave to the sealer at once. An ext4
// directory never shrinks: a process reading a thousand sessions within IdleSeal (a verify,
// an export, a search's snippets) would otherwise leave a thousand names in the sessions
// directory together and grow it for good by about 50 KiB. Past the bound a reader removes
// the file itself, as before; the sessions read over and over (the pages of a resume) are
// the ones a short set keeps.
const maxResting = 16

// leftLock records that a read of this process left id at rest with its lock file in place,
// and reports false (the caller removes the file) when maxResting others wait already.
func (z *sealer) leftLock(id string) bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	if _, ok := z.resting[id]; !ok && len(z.resting) >= maxResting {
		return false
	}
	z.resting[id] = z.s.now()
	return true
}

// restingDue takes, sorted, the sessions whose lock files have waited for IdleSeal (all of
// them when all is set) out of the set to rest.
func (z *sealer) restingDue(all bool) []string {
	now := z.s.now()
	z.mu.Lock()
	defer z.mu.Unlock()
	var ids []string
	for id, at := range z.resting {
		if all || now.Sub(at) >= z.s.opts.IdleSeal {
			ids = append(ids, id)
			delete(z.resting, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// restIdle removes the lock file of each of ids that is still at rest: nobody holds it (in
// this process or another) and it has no tail. A session someone holds is left to them: a
// writer that leaves no tail removes the file itself, and a reader of this process records the
// session again when it lets go (leftLock). closing is set by Close, which has no calls left
// running; otherwise a call that has begun is not waited for (enter refuses after Close).
func (s *Store) restIdle(ids []string, closing bool) {
	if !closing {
		if s.enter() != nil {
			return // Close rests what is left
		}
		defer s.leave()
	}
	for _, id := range ids {
		lf, ok, err := tryLock(s.fs, s.lockPath(id))
		if err != nil || !ok {
			continue // gone, or held: whoever holds it rests it
		}
		if _, err := s.fs.Stat(s.tailPath(id)); errors.Is(err, fs.ErrNotExist) {
			_ = s.fs.Remove(s.lockPath(id)) // a read-only store keeps it
		}
		lf.Close()
	}
}
