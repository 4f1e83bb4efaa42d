package check

// severityOrder is the order tables list statuses in: what needs action
// first (error, drift, pending-reboot), then absent, info and ok.
var severityOrder = [...]Status{Error, Drift, PendingReboot, Absent, Info, OK}

// Severity ranks s for sorting: 0 for error up to 5 for ok; an unknown
// status sorts after ok.
func (s Status) Severity() int {
	for i, v := range severityOrder {
		if v == s {
			return i
		}
	}
	return len(severityOrder)
}
