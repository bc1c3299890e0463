package cluster

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/kubectl/pkg/scheme"
)

// WaitContainerRunning waits until the pod's container (or ephemeral
// container) runs; the error says what it waits on.
func (c *Cluster) WaitContainerRunning(ctx context.Context, ns, pod, container string) error {
	last := "no status"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Kube.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Status != corev1.ConditionTrue {
				last = fmt.Sprintf("%s: %s %s", cond.Type, cond.Reason, cond.Message)
			}
		}
		for _, s := range append(p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses...) {
			if s.Name != container {
				continue
			}
			switch {
			case s.State.Running != nil:
				return true, nil
			case s.State.Waiting != nil:
				last = s.State.Waiting.Reason + ": " + s.State.Waiting.Message
			case s.State.Terminated != nil:
				return false, fmt.Errorf("container %s of %s/%s ended: %s %s", container, ns, pod, s.State.Terminated.Reason, s.State.Terminated.Message)
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("container %s of %s/%s is not running (%s): %w", container, ns, pod, last, err)
	}
	return nil
}

// AttachRun attaches to a container's terminal as u (over WebSocket, as the
// relay does), types input, and returns what the terminal showed once a
// line of output is until (IsLine). The input stays open until then: a shell
// whose input ends can exit before its last output is streamed.
func (u *User) AttachRun(ctx context.Context, ns, pod, container, input, until string) (string, error) {
	req := u.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	exec, err := remotecommand.NewWebSocketExecutor(u.Config, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	inR, inW := io.Pipe()
	out := &lineWatcher{until: until, found: make(chan struct{})}
	streamed := make(chan error, 1)
	go func() {
		streamed <- exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: out, Tty: true,
			TerminalSizeQueue: &fixedSize{done: ctx.Done()}})
	}()
	// Written aside: a stream that never starts never reads it.
	go func() { _, _ = io.WriteString(inW, input) }()
	select {
	case <-out.found:
		_ = inW.Close() // the detach
		select {
		case err := <-streamed:
			_ = err // the stream ends with the detach; what it says then is not the test's
		case <-time.After(5 * time.Second):
		}
		return out.String(), nil
	case err := <-streamed:
		return out.String(), fmt.Errorf("the attach ended before a line %q: %w", until, err)
	case <-ctx.Done():
		return out.String(), fmt.Errorf("no line %q within 60s", until)
	}
}

// IsLine says whether a line of terminal output is want, after any shell
// prompt. A shell started moments before the attach may print its first
// prompt only after the terminal has echoed what was typed, and then the
// output of that command follows the prompt on the same line. A pty echoes
// the input too, so the input must not contain want.
func IsLine(line, want string) bool {
	l := strings.TrimRight(line, "\r")
	for strings.HasPrefix(l, "$ ") || strings.HasPrefix(l, "# ") {
		l = l[2:]
	}
	return l == want
}

// lineWatcher keeps a terminal's output and says when a line is until
// (IsLine).
type lineWatcher struct {
	SyncBuffer
	until string
	found chan struct{}
	once  sync.Once
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	n, err := w.SyncBuffer.Write(p)
	for _, l := range strings.Split(w.String(), "\n") {
		if IsLine(l, w.until) {
			w.once.Do(func() { close(w.found) })
		}
	}
	return n, err
}

// fixedSize is an 80x24 terminal that never resizes: its size once, then
// nothing until the stream ends.
type fixedSize struct {
	sent bool
	done <-chan struct{}
}

func (s *fixedSize) Next() *remotecommand.TerminalSize {
	if !s.sent {
		s.sent = true
		return &remotecommand.TerminalSize{Width: 80, Height: 24}
	}
	<-s.done
	return nil
}
