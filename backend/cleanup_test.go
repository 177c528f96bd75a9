//go:build linux

package backend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Issue 33 item 9: a kernel that builds a deep tree and takes the
// permissions away at its bottom left the whole tree in TMPDIR, silently.

// deepTreeDepth is the depth of the reproduction: 3000 levels of
// a 4-byte name are a path of 15000 bytes, well past PATH_MAX (4096), so
// nothing that walks by path name can reach the bottom.
const deepTreeDepth = 3000

// buildDeepTree makes depth nested directories "d000" under dir, a file at
// every 500th level, and takes every permission away from the directory
// above the bottom one and from one in the middle, all through descriptors (the path
// is too long to name). It returns the number of directories made.
func buildDeepTree(dir string, depth int) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0, err
	}
	for i := 0; i < depth; i++ {
		if i%500 == 0 {
			f, err := unix.Openat(fd, "f", unix.O_WRONLY|unix.O_CREAT, 0o600)
			if err != nil {
				unix.Close(fd)
				return i, err
			}
			unix.Close(f)
		}
		if err := unix.Mkdirat(fd, "d000", 0o755); err != nil {
			unix.Close(fd)
			return i, err
		}
		next, err := unix.Openat(fd, "d000", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if err != nil {
			unix.Close(fd)
			return i, err
		}
		if i == depth/2 || i == depth-1 {
			// fd holds next, which is open already: take fd's permissions.
			if err := unix.Fchmod(fd, 0); err != nil {
				unix.Close(fd)
				unix.Close(next)
				return i, err
			}
		}
		unix.Close(fd)
		fd = next
	}
	unix.Close(fd) // the bottom: empty, its parent mode 000
	return depth, nil
}

// TestRemoveTreeDeep builds the tree (3000 levels, mode 000 at the
// bottom and in the middle) in a case-like directory and removes it with
// removeTree: nothing may be left. Run as root, the permissions would not
// stop anything, so the test then runs itself again as nobody (uid 65534),
// which is what a user meets.
func TestRemoveTreeDeep(t *testing.T) {
	if dir := os.Getenv("NPUVERIFY_TEST_REMOVETREE_DIR"); dir != "" {
		// The unprivileged child: build, remove, report on stderr.
		if n, err := buildDeepTree(dir, deepTreeDepth); err != nil {
			fmt.Fprintf(os.Stderr, "building the tree: %d levels: %v\n", n, err)
			os.Exit(2)
		}
		if err := removeTree(dir); err != nil {
			fmt.Fprintf(os.Stderr, "removeTree: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	parent := t.TempDir()
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "npuverify-case-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	subject := fmt.Sprintf("removeTree of a %d-deep tree with mode 000 at the bottom and in the middle", deepTreeDepth)
	if os.Geteuid() != 0 {
		if _, err := buildDeepTree(dir, deepTreeDepth); err != nil {
			t.Fatal(err)
		}
		if err := removeTree(dir); err != nil {
			t.Errorf("%s: got error %v, want none", subject, err)
		}
	} else {
		// Re-run this test binary as nobody; the binary and the path to
		// the directory must be reachable by it.
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		binDir, err := os.MkdirTemp("", "npuverify-removetree-bin")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(binDir)
		bin := filepath.Join(binDir, "backend.test")
		if err := copyExecutable(self, bin); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{binDir, filepath.Dir(parent), filepath.Dir(filepath.Dir(parent))} {
			os.Chmod(d, 0o755) // reachable (t.TempDir's directories are 0700)
		}
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-test.run=^TestRemoveTreeDeep$")
		cmd.Env = append(os.Environ(), "NPUVERIFY_TEST_REMOVETREE_DIR="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s, as uid 65534: got %v\n%s\nwant it removed", subject, err, out)
		}
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: got the directory still there (%v), want it gone", subject, err)
		// Leave nothing for t.TempDir's cleanup to trip over.
		removeWalk(dir)
	}
}

// TestRemoveWalk drives the walk itself (the fallback when os.RemoveAll
// fails) over the deep tree, whoever runs it.
func TestRemoveWalk(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "npuverify-case-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := buildDeepTree(dir, deepTreeDepth); err != nil {
		t.Fatal(err)
	}
	if err := removeWalk(dir); err != nil {
		t.Errorf("removeWalk of a %d-deep tree: got error %v, want none", deepTreeDepth, err)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removeWalk of a %d-deep tree: got the directory still there (%v), want it gone", deepTreeDepth, err)
	}
}

// TestRemoveTreeImmutable: what cannot be removed at all (an immutable
// file, chattr +i, which even root cannot unlink) is an error naming its
// path, and everything else is still removed. It needs root and a file
// system with the attribute (ext4, xfs, btrfs; not tmpfs).
func TestRemoveTreeImmutable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "npuverify-case-1")
	deep := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, "x"), filepath.Join(deep, "stuck"), filepath.Join(deep, "y")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stuck := filepath.Join(deep, "stuck")
	if out, err := exec.Command("chattr", "+i", stuck).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s (needs root and a file system with the attribute)", err, out)
	}
	defer exec.Command("chattr", "-i", stuck).Run()
	os.Chmod(deep, 0) // and unreadable on the way
	err := removeTree(dir)
	want := []string{"case directory " + dir + " could not be removed", stuck, "operation not permitted"}
	if err == nil || !containsAll(err.Error(), want) {
		t.Errorf("removeTree of a directory holding an immutable file: got error %v, want one containing %q", err, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("removeTree of a directory holding an immutable file: got %s still there (%v), want everything else removed", filepath.Join(dir, "x"), err)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func copyExecutable(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
