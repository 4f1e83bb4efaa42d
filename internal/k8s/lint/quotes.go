package lint

// Messages other tools print, quoted so users recognise them.

// quoteSharedTooLarge is the NVIDIA k8s-device-plugin's Allocate error for a
// request of more than one shared replica with failRequestsGreaterThanOne
// (kubelet reports it as UnexpectedAdmissionError).
const quoteSharedTooLarge = "request for '%s: %d' too large: maximum request size for shared resources is 1"
