package v1alpha1

import "testing"

// TestDebugContainerNames: every debug container a session gets, first or
// resumed, is named after it and read back as it; nothing else is.
func TestDebugContainerNames(t *testing.T) {
	for _, resume := range []int32{0, 1, 2, 12} {
		name := DebugContainerName("s-x7k2p", resume)
		if got, ok := SessionOfDebugContainer(name); !ok || got != "s-x7k2p" {
			t.Errorf("%s: session %q %t", name, got, ok)
		}
	}
	for name, want := range map[string]string{
		"breakglass-s-x7k2p":     "s-x7k2p",
		"breakglass-s-r0":        "s-r0", // r0 is no resume
		"breakglass-s-x-r01":     "s-x-r01",
		"breakglass-s-x-r":       "s-x-r",
		"breakglass-s-x-rx":      "s-x-rx",
		"breakglass--r1":         "-r1",
		"breakglass-copy-of-web": "copy-of-web",
		"breakglass-":            "",
	} {
		if got, ok := SessionOfDebugContainer(name); !ok || got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"web", "sidecar-breakglass-s1"} {
		if got, ok := SessionOfDebugContainer(name); ok {
			t.Errorf("%s read as session %q", name, got)
		}
	}
}
