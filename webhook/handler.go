package webhook

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/tower-dev/breakglass/api/v1alpha1"
)

// ImageVerifier checks one debug image.
type ImageVerifier interface {
	Verify(ctx context.Context, image string) error
}

// Handler admits a request only if every break-glass debug image it adds
// carries a valid signature.
type Handler struct {
	Images  ImageVerifier
	Decoder admission.Decoder
}

// Handle is called by the API server for pod creates and ephemeral-container
// updates that carry a breakglass- container, and pod updates that change
// one's image.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	images, err := h.debugImages(req)
	if err != nil {
		admissions.WithLabelValues("malformed").Inc()
		return admission.Errored(http.StatusBadRequest, err)
	}
	var refusals []string
	for _, img := range images {
		if err := h.Images.Verify(ctx, img); err != nil {
			refusals = append(refusals, err.Error())
		}
	}
	if len(refusals) > 0 {
		admissions.WithLabelValues("denied").Inc()
		return admission.Denied("[webhook.signature] the debug image must be signed by a key the plane trusts: " + strings.Join(refusals, "; "))
	}
	admissions.WithLabelValues("allowed").Inc()
	return admission.Allowed("")
}

// debugImages lists the images of the debug containers a request adds: the
// new breakglass- ephemeral containers of an update, the new images of a
// pod update's breakglass- containers, or the breakglass- containers and the
// hold volume of a created pod.
func (h *Handler) debugImages(req admission.Request) ([]string, error) {
	pod := &corev1.Pod{}
	if err := h.Decoder.DecodeRaw(req.Object, pod); err != nil {
		return nil, fmt.Errorf("decoding the pod: %w", err)
	}
	var images []string
	switch {
	case req.Operation == admissionv1.Update && req.SubResource == "ephemeralcontainers":
		old := &corev1.Pod{}
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return nil, fmt.Errorf("decoding the old pod: %w", err)
		}
		existing := map[string]bool{}
		for _, c := range old.Spec.EphemeralContainers {
			existing[c.Name] = true
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if !existing[c.Name] && strings.HasPrefix(c.Name, v1alpha1.DebugContainerPrefix) {
				images = append(images, c.Image)
			}
		}
	case req.Operation == admissionv1.Update && req.SubResource == "":
		// A copy's breakglass- container given another image.
		old := &corev1.Pod{}
		if err := h.Decoder.DecodeRaw(req.OldObject, old); err != nil {
			return nil, fmt.Errorf("decoding the old pod: %w", err)
		}
		before := map[string]string{}
		for _, c := range append(append([]corev1.Container(nil), old.Spec.InitContainers...), old.Spec.Containers...) {
			before[c.Name] = c.Image
		}
		for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
			if img, ok := before[c.Name]; strings.HasPrefix(c.Name, v1alpha1.DebugContainerPrefix) && (!ok || img != c.Image) {
				images = append(images, c.Image)
			}
		}
	case req.Operation == admissionv1.Create:
		for _, c := range append(append([]corev1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
			if strings.HasPrefix(c.Name, v1alpha1.DebugContainerPrefix) {
				images = append(images, c.Image)
			}
		}
		// A held copy runs the debug image's sleep from its hold volume in
		// every app container: that image is checked like a debug container's.
		for _, v := range pod.Spec.Volumes {
			if v.Image != nil && v.Name == v1alpha1.HoldVolume {
				images = append(images, v.Image.Reference)
			}
		}
	}
	return images, nil
}
