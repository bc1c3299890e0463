package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
)

// processes is the virtual node's container runtime: each container is a
// local process on a pty, run as the container's user where the tests run
// as root.
type processes struct {
	mu    sync.Mutex
	procs map[string]*process // "namespace/pod/container"
}

type process struct {
	// stdinOnce: the first attach's detach closes the container's input,
	// which ends its shell (as a runtime hangs up the terminal).
	stdinOnce bool
	cmd       *exec.Cmd
	pty       *os.File
	size      *sizer
	uid       *int64
	mu        sync.Mutex
	subs      map[io.Writer]chan struct{}
	done      chan struct{}
}

func newProcesses() *processes { return &processes{procs: map[string]*process{}} }

// start runs the container's command (a shell when it has none), once.
func (p *processes) start(pod *corev1.Pod, container string, command []string, sc *corev1.SecurityContext, stdinOnce bool) (bool, error) {
	key := pod.Namespace + "/" + pod.Name + "/" + container
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.procs[key]; ok {
		return false, nil
	}
	if len(command) == 0 {
		command = []string{"/bin/sh"}
	}
	var uid *int64
	if sc != nil {
		uid = sc.RunAsUser
	}
	cmd := newCommand(command, uid)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 24, Cols: 80})
	if err != nil {
		return false, fmt.Errorf("starting %s: %w", key, err)
	}
	proc := &process{stdinOnce: stdinOnce, cmd: cmd, pty: f, size: newSizer(f), uid: uid, subs: map[io.Writer]chan struct{}{}, done: make(chan struct{})}
	p.procs[key] = proc
	go proc.pump()
	return true, nil
}

// newCommand runs argv as uid when the tests run as root, with a plain
// environment: nothing of the test process leaks into a container.
func newCommand(argv []string, uid *int64) *exec.Cmd {
	// The virtual node runs what the pod spec says, by design.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm", "HOME=/"}
	cmd.Dir = "/"
	if uid != nil && os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(*uid), Gid: uint32(*uid)}}
	}
	return cmd
}

// end ends the container: its shell and every job the shell started, each
// in a process group of its own but all in the shell's session (the pty
// made the shell a session leader). Killed, not hung up: a test run with
// SIGHUP ignored (under nohup) passes that on to every process, and a
// container's processes end with it whatever they ignore.
func (p *process) end() {
	sid := p.cmd.Process.Pid
	entries, err := os.ReadDir("/proc")
	if err != nil {
		_ = syscall.Kill(-sid, syscall.SIGKILL)
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := unix.Getsid(pid); err == nil && s == sid {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// pump copies the pty's output to whoever is attached, until the process ends.
func (p *process) pump() {
	buf := make([]byte, 32*1024)
	for {
		n, err := p.pty.Read(buf)
		if n > 0 {
			p.mu.Lock()
			for w, gone := range p.subs {
				if _, werr := w.Write(buf[:n]); werr != nil {
					delete(p.subs, w)
					close(gone)
				}
			}
			p.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	_ = p.cmd.Wait()
	p.mu.Lock()
	for w, gone := range p.subs {
		delete(p.subs, w)
		close(gone)
	}
	p.mu.Unlock()
	close(p.done)
}

func (p *processes) get(name, container string) (*process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	proc, ok := p.procs[name+"/"+container]
	if !ok {
		return nil, fmt.Errorf("container %s in pod %s is not running", container, name)
	}
	return proc, nil
}

// AttachContainer joins the container's terminal: output from now on goes
// to out, in goes to the terminal, until in ends (the detach) or the
// container exits.
func (p *processes) AttachContainer(ctx context.Context, name, _ string, container string, in io.Reader, out, _ io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	proc, err := p.get(name, container)
	if err != nil {
		return err
	}
	gone := make(chan struct{})
	if out != nil {
		proc.mu.Lock()
		proc.subs[out] = gone
		proc.mu.Unlock()
		defer func() {
			proc.mu.Lock()
			if _, ok := proc.subs[out]; ok {
				delete(proc.subs, out)
				close(gone)
			}
			proc.mu.Unlock()
		}()
	}
	go proc.size.loop(resize)
	detached := make(chan struct{})
	if in != nil {
		go func() {
			_, _ = io.Copy(proc.pty, in)
			close(detached)
		}()
	}
	select {
	case <-ctx.Done():
	case <-detached:
		if proc.stdinOnce {
			proc.end()
		}
	case <-proc.done:
	case <-gone:
	}
	return nil
}

// ExecInContainer runs cmd beside the container, as its user, on a pty of its own.
func (p *processes) ExecInContainer(ctx context.Context, name, _ string, container string, argv []string, in io.Reader, out, _ io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	proc, err := p.get(name, container)
	if err != nil {
		return err
	}
	if len(argv) == 0 {
		return fmt.Errorf("no command")
	}
	cmd := newCommand(argv, proc.uid)
	f, err := pty.Start(cmd)
	if err != nil {
		return err
	}
	size := newSizer(f)
	defer size.close()
	go size.loop(resize)
	if in != nil {
		go func() { _, _ = io.Copy(f, in) }()
	}
	if out != nil {
		go func() { _, _ = io.Copy(out, f) }()
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		killed := <-waited // "signal: killed", as asked
		return errors.Join(ctx.Err(), killed)
	case err := <-waited:
		return err
	}
}

// sizer sets a pty's size from an attach's resize stream. It keeps the fd
// number from before any concurrency (os.File.Fd must not race with Close)
// and never touches it once the pty is closed, when the number may be reused.
type sizer struct {
	mu     sync.Mutex
	f      *os.File
	fd     int
	closed bool
}

func newSizer(f *os.File) *sizer { return &sizer{f: f, fd: int(f.Fd())} }

func (s *sizer) loop(resize <-chan remotecommand.TerminalSize) {
	for size := range resize {
		s.mu.Lock()
		if !s.closed {
			_ = unix.IoctlSetWinsize(s.fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
		}
		s.mu.Unlock()
	}
}

func (s *sizer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	_ = s.f.Close()
}

func (p *processes) stopPod(namespace, pod string) {
	prefix := namespace + "/" + pod + "/"
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, proc := range p.procs {
		if len(key) > len(prefix) && key[:len(prefix)] == prefix {
			proc.end()
			proc.size.close()
			delete(p.procs, key)
		}
	}
}

func (p *processes) stopAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for key, proc := range p.procs {
		proc.end()
		proc.size.close()
		delete(p.procs, key)
	}
}
