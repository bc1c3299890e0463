package policies

// The table: every field of every schema the plane admits, judged in each
// place (fields.go). How says what the kubelet, the runtime or the
// scheduler do with the field; Rules are the validations that hold it.
// A field a Kubernetes version adds fails test/integration's
// TestFieldsJudged until it has a line here.

func allowed(how string) Verdict { return Verdict{Judgement: Allowed, How: how} }
func bounded(how string, rules ...string) Verdict {
	return Verdict{Judgement: Bounded, How: how, Rules: rules}
}
func setByRelay(how string, rules ...string) Verdict {
	return Verdict{Judgement: SetByRelay, How: how, Rules: rules}
}
func refused(how string, rules ...string) Verdict {
	return Verdict{Judgement: Refused, How: how, Rules: rules}
}
func apiRefuses(how string) Verdict { return Verdict{Judgement: APIRefuses, How: how} }

// none is a field the rules refuse in their own words: bounded to none,
// so the generated rule lets it by for them to say why.
func none(how string, rules ...string) Verdict { return bounded("none: "+how, rules...) }

// both is one verdict in both places; each is a verdict per place.
func both(v Verdict) map[Place]Verdict { return map[Place]Verdict{InDebug: v, InCopy: v} }
func each(debug, copy Verdict) map[Place]Verdict {
	return map[Place]Verdict{InDebug: debug, InCopy: copy}
}
func debugOnly(v Verdict) map[Place]Verdict { return map[Place]Verdict{InDebug: v} }
func copyOnly(v Verdict) map[Place]Verdict  { return map[Place]Verdict{InCopy: v} }

// onFlightAttached is how the relay sets a field of its debug container,
// which Flight holds it to (debug.attached): a shell the relay attaches to
// and records, ending with the attach. On Ground a developer's kubectl
// debug sets them as it likes.
func onFlightAttached(how string) string {
	return how + " (on Flight; on Ground as kubectl debug sets it)"
}

// inherited is a pod field a debug container joining the pod gains nothing from.
func inherited(how string) Verdict {
	return allowed("the pod's own: " + how + "; a debug container joining it gains nothing from it")
}

// Names of the rules the table cites, generated ones included.
const (
	ruleDebugFields      = "debug.fields"
	ruleDebugPodFields   = "debug.pod-fields"
	ruleCopySpecFields   = "copy.spec-fields"
	ruleCopyFields       = "copy.container-fields"
	ruleCopyResources    = "copy.resources"
	ruleCopyLifetime     = "copy.lifetime"
	ruleDebugMounted     = "debug.mounted-volumes"
	ruleCopyMounted      = "copy.mounted-volumes"
	ruleCopyVolumes      = "copy.volumes"
	ruleCopyPodSecurity  = "copy.pod-security"
	ruleCopyPlacement    = "copy.placement"
	ruleCopyCredentials  = "copy.credentials"
	ruleCopyEnv          = "copy.app.env"
	ruleDebugEnv         = "debug.env"
	ruleDebugPrivilege   = "debug.privilege"
	ruleCopyAppPrivilege = "copy.app.privilege"
)

// A volume source a debug container may not mount, and a copy may not have.
func noVolume(how string) map[Place]Verdict {
	return each(refused("not mounted into a debug container: "+how, ruleDebugMounted),
		refused("not in a copy: "+how, ruleCopyVolumes))
}

// A projection, likewise.
func noProjection(how string) map[Place]Verdict {
	return each(refused("a projected volume holding it is not mounted into a debug container: "+how, ruleDebugMounted),
		refused("a copy projects no such source: "+how, ruleCopyVolumes))
}

// The API server refuses these for an ephemeral container (validation's
// allowedEphemeralContainerFields: "Lifecycle, probes, resources and ports
// should be disallowed").
const ephemeralRefused = "the API server refuses it for an ephemeral container (pkg/apis/core/validation, allowedEphemeralContainerFields)"

var fieldTable = map[string]map[string]map[Place]Verdict{
	"PodSpec": {
		"activeDeadlineSeconds": each(inherited("how long the pod may run"),
			setByRelay("at most the grant's longest TTL (params.grantTTL.max): the kubelet ends the copy then, even with the sweeper down", ruleCopyLifetime)),
		"affinity":                     each(inherited("scheduling"), allowed("scheduling only: a copy names its node, which the kubelet only checks it fits")),
		"automountServiceAccountToken": each(inherited("whether the pod mounts its token; the token volume is not mountable into a debug container"), setByRelay("false: no API token", ruleCopyCredentials)),
		"containers":                   each(inherited("the app's containers, judged when they were made"), bounded("each as Container says; one is the debug container", "copy.has-debug-container", ruleCopyFields)),
		"dnsConfig":                    both(allowed("name resolution inside the pod's own network namespace")),
		"dnsPolicy":                    both(allowed("which resolver the pod uses; ClusterFirstWithHostNet means nothing without the node's network, which is refused")),
		"enableServiceLinks":           both(allowed("Services' addresses as environment variables: addresses, no secret")),
		"ephemeralContainers":          each(bounded("the ones a request adds are judged here; those before were judged when added", ruleDebugFields), apiRefuses("the API server refuses ephemeral containers on create; later ones are DebugContainer's")),
		"evictionResponders": each(inherited("who answers the pod's evictions"),
			refused("a copy answers to no eviction responder, which could hold it past its session")),
		"hostAliases":       both(allowed("lines in the pod's own /etc/hosts")),
		"hostIPC":           each(bounded("false only: a debug container would share the node's IPC", "debug.host-namespaces"), bounded("false only", ruleCopyPodSecurity)),
		"hostNetwork":       each(bounded("false only: a debug container would share the node's network", "debug.host-namespaces"), bounded("false only", ruleCopyPodSecurity)),
		"hostPID":           each(bounded("false only: a debug container would see the node's processes", "debug.host-namespaces"), bounded("false only", ruleCopyPodSecurity)),
		"hostUsers":         both(allowed("true (the default) or false, a user namespace of the pod's own: neither gives a container more than the rules below allow")),
		"hostname":          both(allowed("the pod's own hostname")),
		"hostnameOverride":  both(allowed("the pod's own hostname")),
		"imagePullSecrets":  both(allowed("what the kubelet pulls images with; no container sees them, and the debug image is pinned by digest")),
		"initContainers":    each(inherited("the app's init containers (sidecars among them), judged when they were made"), bounded("none: they would run the app's set-up again", "copy.no-init-containers")),
		"nodeName":          each(bounded("set: a debug container goes only into a pod bound to its node", "debug.bound"), bounded("set: the node of the pod it copies", ruleCopyPlacement)),
		"nodeSelector":      both(allowed("scheduling only")),
		"os":                each(inherited("the pod's operating system"), bounded("linux", ruleCopyPlacement)),
		"overhead":          each(inherited("what its runtime class costs"), refused("a copy runs in the node's default runtime, which has no overhead")),
		"preemptionPolicy":  both(allowed("set from the priority class by the priority admission plugin")),
		"priority":          both(allowed("set from the priority class by the priority admission plugin")),
		"priorityClassName": each(inherited("its priority"), bounded("no system- class: a copy never makes the kubelet evict the node's own pods", ruleCopyPlacement)),
		"readinessGates":    both(allowed("conditions the pod waits on before it counts as ready: a copy takes no traffic either way")),
		"resourceClaims": each(inherited("the devices its containers claim: an ephemeral container can claim none"),
			bounded("none: a device's driver can hand a container the node's devices and paths", "copy.devices")),
		"resources": each(inherited("its pod-level requests and limits"),
			bounded("cpu, memory and hugepages only, as the API server allows at pod level", ruleCopyResources)),
		"restartPolicy": each(inherited("whether its containers restart"),
			setByRelay("Never: a copy runs once", ruleCopyLifetime)),
		"runtimeClassName": each(bounded("only one the chart's params.runtimeClasses lists: a handler may run containers privileged or hand them devices", "debug.runtime-class"),
			bounded("none: the node's default runtime", ruleCopyPodSecurity)),
		"schedulerName":   both(allowed("which scheduler places the pod: a pod named to its node is placed by none")),
		"schedulingGates": both(allowed("gates that keep a pod from being scheduled: a pod named to its node is placed by no scheduler")),
		"schedulingGroup": each(inherited("its scheduling group"),
			refused("a copy belongs to no scheduling group, whose policy could hold it or pre-empt with the app's")),
		"securityContext": each(bounded("as PodSecurityContext says (inherited settings)", ruleDebugPodFields),
			bounded("as PodSecurityContext says", ruleCopyPodSecurity)),
		"serviceAccount": each(inherited("its identity, as serviceAccountName (the deprecated spelling)"),
			bounded("the namespace's default account, as serviceAccountName", ruleCopyCredentials)),
		"serviceAccountName": each(inherited("its identity: a debug container mounts no token of it; a metadata server answering for the pod's network answers the debug container too (docs/threat-model.md)"),
			bounded("the namespace's default account: no cloud identity bound to the app's", ruleCopyCredentials)),
		"setHostnameAsFQDN": both(allowed("the pod's own hostname")),
		"shareProcessNamespace": each(bounded("only with the process grant", "debug.process-access"),
			bounded("only with the process grant", "copy.process-access")),
		"subdomain": both(allowed("the pod's own DNS name")),
		"terminationGracePeriodSeconds": each(inherited("how long it has to stop"),
			bounded("at most 30 seconds", ruleCopyLifetime)),
		"tolerations": each(inherited("the taints it tolerates"),
			bounded("each names a taint's key: a copy tolerates no taint it does not name", ruleCopyPlacement)),
		"topologySpreadConstraints": both(allowed("scheduling only")),
		"volumes": each(bounded("mounted into a debug container only as Volume says", ruleDebugMounted),
			bounded("as Volume says", ruleCopyVolumes)),
		"workloadRef": each(inherited("its workload group (v1.35 only)"),
			refused("a copy belongs to no workload group (v1.35's spelling of schedulingGroup)")),
	},
	"PodSecurityContext": {
		"appArmorProfile":          each(bounded("the runtime's default, unless the debug container sets its own", "debug.confinement"), bounded("the runtime's default", ruleCopyPodSecurity)),
		"fsGroup":                  each(bounded("never 0: every container would be in the root group", "debug.groups"), bounded("never 0", ruleCopyPodSecurity)),
		"fsGroupChangePolicy":      both(allowed("when the kubelet changes volumes' group ownership")),
		"runAsGroup":               each(bounded("the debug container sets its own (the debug user's group)", "debug.user"), bounded("never 0", ruleCopyPodSecurity)),
		"runAsNonRoot":             each(bounded("the debug container sets its own (true)", "debug.user"), allowed("each container sets its own (true)")),
		"runAsUser":                each(bounded("the debug container sets its own (the debug user)", "debug.user"), bounded("never 0", ruleCopyPodSecurity)),
		"seLinuxChangePolicy":      both(allowed("how the kubelet relabels volumes")),
		"seLinuxOptions":           each(bounded("a container type, no user or role, unless the debug container sets its own", "debug.confinement"), bounded("a container type, no user or role", ruleCopyPodSecurity)),
		"seccompProfile":           each(bounded("RuntimeDefault, unless the debug container sets its own (it does)", "debug.seccomp"), bounded("RuntimeDefault", ruleCopyPodSecurity)),
		"supplementalGroups":       each(bounded("never 0", "debug.groups"), bounded("never 0", ruleCopyPodSecurity)),
		"supplementalGroupsPolicy": both(allowed("Merge adds the groups the image's /etc/group gives the user: the debug image's, or the copied image's own")),
		"sysctls":                  each(inherited("its namespaced sysctls, already applied to the namespaces the debug container joins"), bounded("none", ruleCopyPodSecurity)),
		"windowsOptions":           each(bounded("no host process", ruleDebugPrivilege), bounded("none", ruleCopyPodSecurity)),
	},
	"EphemeralContainer": {
		"args":                     debugOnly(setByRelay(onFlightAttached("none: the image's own shell"), "debug.attached")),
		"command":                  debugOnly(setByRelay(onFlightAttached("none: the image's own shell"), "debug.attached")),
		"env":                      debugOnly(setByRelay("none: a value could be a device hook's request, a reference a secret's", ruleDebugEnv)),
		"envFrom":                  debugOnly(setByRelay("none", ruleDebugEnv)),
		"image":                    debugOnly(bounded("pinned by digest, in params.debugImages, and signed (the webhook)", "debug.image-digest", "debug.image-allowed")),
		"imagePullPolicy":          debugOnly(allowed("an image pinned by digest is the same bytes however it is pulled")),
		"lifecycle":                debugOnly(apiRefuses(ephemeralRefused)),
		"livenessProbe":            debugOnly(apiRefuses(ephemeralRefused)),
		"name":                     debugOnly(bounded("starts breakglass-", "debug.name")),
		"ports":                    debugOnly(apiRefuses(ephemeralRefused)),
		"readinessProbe":           debugOnly(apiRefuses(ephemeralRefused)),
		"resizePolicy":             debugOnly(apiRefuses(ephemeralRefused)),
		"resources":                debugOnly(apiRefuses(ephemeralRefused)),
		"restartPolicy":            debugOnly(apiRefuses(ephemeralRefused)),
		"restartPolicyRules":       debugOnly(apiRefuses(ephemeralRefused)),
		"securityContext":          debugOnly(bounded("as SecurityContext says", "debug.user", "debug.read-only-root")),
		"startupProbe":             debugOnly(apiRefuses(ephemeralRefused)),
		"stdin":                    debugOnly(setByRelay(onFlightAttached("true: the relay attaches to it"), "debug.attached")),
		"stdinOnce":                debugOnly(setByRelay(onFlightAttached("true: the shell ends with the relay's attach"), "debug.attached")),
		"targetContainerName":      debugOnly(bounded("only with the process grant", "debug.process-access", "debug.same-user")),
		"terminationMessagePath":   debugOnly(allowed("the kubelet's file for the container's last words, of which it reads at most 4 KiB")),
		"terminationMessagePolicy": debugOnly(allowed("whether the kubelet falls back to the log for the last words")),
		"tty":                      debugOnly(setByRelay(onFlightAttached("true: a terminal for the relay's attach"), "debug.attached")),
		"volumeDevices":            debugOnly(none("no raw block device", "debug.mounts")),
		"volumeMounts":             debugOnly(bounded("read-only, of volumes Volume lets a debug container mount", "debug.mounts", ruleDebugMounted)),
		"workingDir":               debugOnly(allowed("a directory in the debug image")),
	},
	"Container": {
		"args":                     copyOnly(allowed("the app's own, or the hold's")),
		"command":                  copyOnly(allowed("the app's own, or the hold's")),
		"env":                      copyOnly(bounded("the app's own values, ConfigMap keys and the downward API (as EnvVarSource says); no variable a device hook reads", ruleCopyEnv, ruleCopyFields)),
		"envFrom":                  copyOnly(bounded("ConfigMaps only, as EnvFromSource says", ruleCopyFields)),
		"image":                    copyOnly(bounded("pinned by digest; the debug container's in params.debugImages", "copy.images", "copy.image-digest", "copy.image-allowed")),
		"imagePullPolicy":          copyOnly(allowed("an image pinned by digest is the same bytes however it is pulled")),
		"lifecycle":                copyOnly(none("the kubelet runs hooks from the node, with the node's network", "copy.hooks")),
		"livenessProbe":            copyOnly(none("the kubelet runs probes from the node, with the node's network", "copy.hooks")),
		"name":                     copyOnly(allowed("the container's name; a debug container's starts breakglass-")),
		"ports":                    copyOnly(bounded("no host port: a copy takes no traffic", "copy.app.host-ports")),
		"readinessProbe":           copyOnly(none("the kubelet runs probes from the node, with the node's network", "copy.hooks")),
		"resizePolicy":             copyOnly(allowed("how a resize would apply: a copy is never resized (copy.no-resize)")),
		"resources":                copyOnly(bounded("as ResourceRequirements says", ruleCopyResources, "copy.devices")),
		"restartPolicy":            copyOnly(refused("a copy's containers run once, as the pod's restartPolicy Never says")),
		"restartPolicyRules":       copyOnly(refused("a copy's containers run once")),
		"securityContext":          copyOnly(bounded("as SecurityContext says", ruleCopyAppPrivilege, "copy.app.non-root", "copy.user", "copy.read-only-root")),
		"startupProbe":             copyOnly(none("the kubelet runs probes from the node, with the node's network", "copy.hooks")),
		"stdin":                    copyOnly(allowed("as the app's, or the relay's attach")),
		"stdinOnce":                copyOnly(allowed("as the app's, or the relay's attach")),
		"terminationMessagePath":   copyOnly(allowed("the kubelet's file for the container's last words, of which it reads at most 4 KiB")),
		"terminationMessagePolicy": copyOnly(allowed("whether the kubelet falls back to the log for the last words")),
		"tty":                      copyOnly(allowed("as the app's, or the relay's attach")),
		"volumeDevices":            copyOnly(refused("no raw block device: the app's claims are mounted as files, read-only")),
		"volumeMounts":             copyOnly(bounded("of the copy's volumes; a debug container's read-only", "copy.mounts", ruleCopyMounted)),
		"workingDir":               copyOnly(allowed("a directory in the image")),
	},
	"SecurityContext": {
		"allowPrivilegeEscalation": each(setByRelay("false", ruleDebugPrivilege), bounded("false", ruleCopyAppPrivilege, "copy.privilege")),
		"appArmorProfile":          each(bounded("the runtime's default", "debug.confinement"), bounded("the runtime's default", "copy.app.confinement", "copy.confinement")),
		"capabilities":             each(setByRelay("drop ALL, add none", "debug.capabilities"), bounded("drop ALL, add none", "copy.app.capabilities", "copy.capabilities")),
		"privileged":               each(bounded("false", ruleDebugPrivilege), bounded("false", ruleCopyAppPrivilege, "copy.privilege")),
		"procMount":                each(bounded("Default", ruleDebugPrivilege), bounded("Default", ruleCopyAppPrivilege, "copy.privilege")),
		"readOnlyRootFilesystem":   each(setByRelay("true", "debug.read-only-root"), allowed("the app's own choice; a debug container's true (copy.read-only-root)")),
		"runAsGroup":               each(setByRelay("the debug user's group", "debug.user"), bounded("never 0", "copy.app.non-root", "copy.user")),
		"runAsNonRoot":             each(setByRelay("true", "debug.user"), bounded("true", "copy.app.non-root", "copy.user")),
		"runAsUser":                each(setByRelay("the debug user", "debug.user"), bounded("never 0", "copy.app.non-root", "copy.user")),
		"seLinuxOptions":           each(bounded("a container type, no user or role", "debug.confinement"), bounded("a container type, no user or role", "copy.app.confinement", "copy.confinement")),
		"seccompProfile":           each(setByRelay("RuntimeDefault", "debug.seccomp"), bounded("RuntimeDefault", "copy.app.seccomp", "copy.seccomp")),
		"windowsOptions":           each(none("no Windows options: a host process, or an Active Directory identity", ruleDebugPrivilege), none("no Windows options", ruleCopyAppPrivilege, "copy.privilege")),
	},
	"ResourceRequirements": {
		"claims":   copyOnly(bounded("none: a device's driver can hand a container the node's devices", "copy.devices")),
		"limits":   copyOnly(bounded("cpu, memory, ephemeral-storage and hugepages-*: an extended resource is a device plugin handing the container the node's devices", ruleCopyResources)),
		"requests": copyOnly(bounded("cpu, memory, ephemeral-storage and hugepages-*", ruleCopyResources)),
	},
	"VolumeMount": {
		"bindMountOptions":  both(allowed("noexec, nodev, nosuid: each takes something away")),
		"mountPath":         both(allowed("where in the container the volume shows")),
		"mountPropagation":  both(allowed("None or HostToContainer; Bidirectional needs a privileged container, which is refused")),
		"name":              each(bounded("a volume a debug container may mount", ruleDebugMounted), bounded("one of the copy's volumes", ruleCopyVolumes)),
		"readOnly":          each(setByRelay("true", "debug.mounts"), bounded("true for a debug container", "copy.mounts")),
		"recursiveReadOnly": both(allowed("Enabled or IfPossible makes a read-only mount read-only all the way down; Disabled only with readOnly, over volumes with no mounts inside")),
		"subPath":           each(apiRefuses("the API server refuses a subPath for an ephemeral container"), allowed("a path inside the copy's volume, which the kubelet resolves within it")),
		"subPathExpr":       each(apiRefuses("the API server refuses a subPathExpr for an ephemeral container"), allowed("a path inside the copy's volume, from the downward API")),
	},
	"EnvVarSource": {
		"configMapKeyRef":  copyOnly(allowed("a ConfigMap's key: configuration, no secret")),
		"fieldRef":         copyOnly(allowed("the downward API: the pod's name, namespace, addresses, labels")),
		"fileKeyRef":       copyOnly(refused("a key read from a file in a volume, which may hold anything the app wrote")),
		"resourceFieldRef": copyOnly(allowed("the container's own requests and limits")),
		"secretKeyRef":     copyOnly(refused("a Secret's key")),
	},
	"EnvFromSource": {
		"configMapRef": copyOnly(allowed("a ConfigMap: configuration, no secret")),
		"prefix":       copyOnly(allowed("a prefix for the names")),
		"secretRef":    copyOnly(refused("a Secret")),
	},
	"Volume": {
		"name":        both(allowed("the volume's name")),
		"configMap":   both(allowed("a ConfigMap: configuration, no secret")),
		"downwardAPI": both(allowed("the pod's own metadata")),
		"emptyDir": each(refused("not mounted into a debug container: a sidecar may write secrets there (a Vault agent's rendered secrets, a mesh's identity key)", ruleDebugMounted),
			allowed("a scratch directory of the copy's own, empty at its start")),
		"persistentVolumeClaim": each(refused("not mounted into a debug container: a claim may be bound to any volume, a node's path (hostPath, local) or a CSI driver's secrets among them", ruleDebugMounted),
			bounded("read-only: a copy never writes the app's data (what the claim is bound to is the app's own, as it ran)", ruleCopyVolumes)),
		"image": each(refused("not mounted into a debug container: an image may hold anything, keys baked in among them", ruleDebugMounted),
			bounded("only the hold volume: a pinned debug image", ruleCopyVolumes)),
		"projected":            each(bounded("only of ConfigMaps and the downward API, as VolumeProjection says", ruleDebugMounted), bounded("only of ConfigMaps and the downward API", ruleCopyVolumes)),
		"secret":               noVolume("a Secret"),
		"csi":                  noVolume("a CSI driver's volume, which may be a secrets store or the node's"),
		"hostPath":             noVolume("the node's own files (use a copy, which leaves them behind)"),
		"ephemeral":            noVolume("a volume a storage class's driver makes, which may be anything"),
		"gitRepo":              noVolume("the kubelet runs git on the node to fill it"),
		"flexVolume":           noVolume("a binary on the node mounts it"),
		"awsElasticBlockStore": noVolume("a cloud disk of the node's"),
		"azureDisk":            noVolume("a cloud disk of the node's"),
		"azureFile":            noVolume("a cloud share, mounted with a Secret's key"),
		"cephfs":               noVolume("a network file system, mounted with a keyring"),
		"cinder":               noVolume("a cloud disk of the node's"),
		"fc":                   noVolume("a Fibre Channel disk of the node's"),
		"flocker":              noVolume("a network volume"),
		"gcePersistentDisk":    noVolume("a cloud disk of the node's"),
		"glusterfs":            noVolume("a network file system"),
		"iscsi":                noVolume("a network disk, mounted with CHAP secrets"),
		"nfs":                  noVolume("a network file system the node mounts"),
		"photonPersistentDisk": noVolume("a network disk"),
		"portworxVolume":       noVolume("a network volume"),
		"quobyte":              noVolume("a network file system"),
		"rbd":                  noVolume("a network disk, mounted with a keyring"),
		"scaleIO":              noVolume("a network volume, mounted with a Secret"),
		"storageos":            noVolume("a network volume, mounted with a Secret"),
		"vsphereVolume":        noVolume("a cloud disk of the node's"),
	},
	"VolumeProjection": {
		"configMap":           both(allowed("a ConfigMap")),
		"downwardAPI":         both(allowed("the pod's own metadata")),
		"secret":              noProjection("a Secret"),
		"serviceAccountToken": noProjection("an API token of the pod's account"),
		"clusterTrustBundle":  noProjection("a trust bundle the cluster signs with"),
		"podCertificate":      noProjection("the pod's own private key and certificate"),
	},
}
