package report

import "github.com/udpstp/udpstp/dataphase"

// The JSON document in OB-UDPST 9.0.0's schema (see the package doc): same
// keys in the same order, same types, units and number precisions. Three
// shapes exist: no Test Connection activated (header and error fields
// only), activated but no results (Output with only its start fields,
// EOMTime and Status), and complete.

// ExtensionKey is the top-level key under which udpstp adds its own
// figures (after every OB-UDPST key), only when Options.Extensions asks
// for them and they are non-zero.
const ExtensionKey = "udpstp"

// document is the results' tree; ext adds the extension (Options.Extensions).
func (r *results) document(f Format, ext bool) *jobj {
	brief := f == FormatJSONBrief
	top := &jobj{}
	if !brief {
		top.int("IPLayerMaxConnections", maxConnections)
		top.int("IPLayerMaxIncrementalResult", maxIncremental)
		sup := top.obj("IPLayerCapSupported")
		sup.str("SoftwareVersion", softwareVersion())
		sup.int("ControlProtocolVersion", protocolVersion)
		sup.str("Metrics", metricsSupported)
	}
	if r.info != nil {
		if !brief {
			top.add("Input", inputObject(r.info))
		}
		top.add("Output", r.output())
	}
	top.int("ErrorStatus", int64(r.status))
	top.str("ErrorMessage", r.msg)
	top.str("ErrorMessage2", r.msg2)
	if ext && (r.skips.any() || r.connsShown() || len(r.fine) > 0 || r.fineMin.OWDSet || r.fineMin.RTTSet || r.stillRising ||
		r.groupWindow > 0 || r.selection != nil || r.reasmFails > 0) {
		top.add(ExtensionKey, r.extension())
	}
	return top
}

// inputObject is the result's "Input": the test as the client asked for it,
// in OB-UDPST's key order.
func inputObject(t *TestInfo) *jobj {
	in := &jobj{}
	inputEndpoints(in, t)
	inputTraffic(in, t)
	inputAlgorithm(in, t)
	return in
}

// inputEndpoints adds the interface, the servers and the client's address.
func inputEndpoints(in *jobj, t *TestInfo) {
	in.str("Interface", t.Interface)
	role := "Receiver"
	if t.Upstream {
		role = "Sender"
	}
	in.str("Role", role)
	in.int("ID", int64(t.MCIdent))
	var first Host
	if len(t.Hosts) > 0 {
		first = t.Hosts[0]
	}
	in.str("Host", first.Name)
	in.str("HostIPAddress", first.Addr)
	in.int("Port", int64(t.ServerPort))
	in.int("NumberOfHosts", int64(len(t.Hosts)))
	hosts := jarr{}
	for _, h := range t.Hosts {
		o := &jobj{}
		o.str("Host", h.Name)
		o.str("HostIPAddress", h.Addr)
		o.int("ControlPort", int64(h.ControlPort))
		hosts = append(hosts, o)
	}
	in.add("HostList", hosts)
	in.str("ClientIPAddress", t.ClientAddr)
	in.int("ClientPort", int64(t.ClientPort))
}

// inputTraffic adds what the load is made of: connections, marking, family
// and payload sizes.
func inputTraffic(in *jobj, t *TestInfo) {
	in.flag("JumboFramesPermitted", t.Jumbo)
	in.int("NumberOfConnections", int64(t.ConnMax))
	in.int("MinNumOfConnections", int64(t.ConnMin))
	in.int("DSCP", int64(t.DSCPECN>>2))
	in.int("ECN", int64(t.DSCPECN&3))
	in.int("CEThreshold", int64(t.CEThresh))
	switch t.Family {
	case dataphase.FamilyV4:
		in.str("ProtocolVersion", "IPv4")
	case dataphase.FamilyV6:
		in.str("ProtocolVersion", "IPv6")
	default:
		in.str("ProtocolVersion", "Any")
	}
	v6 := int64(0)
	if t.IPv6 {
		v6 = ipv6Extra
	}
	in.int("UDPPayloadMin", minPayload-v6)
	def := int64(defaultPayload)
	if t.TraditionalMTU {
		def = tradPayload
	}
	maxPayload := def
	if t.Jumbo {
		maxPayload = jumboPayload
	}
	in.int("UDPPayloadMax", maxPayload-v6)
	in.int("UDPPayloadDefault", def-v6)
	content := "zeroes"
	if t.RandomPayload {
		content = "random"
	}
	in.str("UDPPayloadContent", content)
}

// inputAlgorithm adds the test type, its timers and the rate adjustment
// algorithm's parameters.
func inputAlgorithm(in *jobj, t *TestInfo) {
	search := t.auto() || t.SRStart
	if search {
		in.str("TestType", "Search")
	} else {
		in.str("TestType", "Fixed")
	}
	in.flag("IPDVEnable", t.UseOWD)
	in.int("IPRREnable", 1)
	in.int("RIPREnable", 1)
	in.int("PreambleDuration", 0)
	in.int("MaxRequiredBandwidth", int64(t.MaxBandwidth))
	switch {
	case t.auto():
		in.int("StartSendingRateIndex", 0)
		in.int("SendingRateIndex", -1)
	case t.SRStart:
		in.int("StartSendingRateIndex", int64(t.SRIndex))
		in.int("SendingRateIndex", -1)
	default:
		in.int("StartSendingRateIndex", int64(t.SRIndex))
		in.int("SendingRateIndex", int64(t.SRIndex))
	}
	in.int("NumberTestSubIntervals", int64(t.subIntervals()))
	in.int("NumberFirstModeTestSubIntervals", int64(t.Bimodal))
	in.int("NumberFirstModeSuppSubIntervals", int64(t.SuppCount))
	in.int("TestSubInterval", int64(t.SubIntPeriod))
	in.int("StatusFeedbackInterval", int64(t.TrialInt))
	in.int("TimeoutNoTestTraffic", warnNoTrafficMs)
	in.int("TimeoutNoStatusMessage", warnNoTrafficMs)
	in.int("Tmax", warnNoTrafficMs)
	in.int("TmaxRTT", timeoutNoTraffic)
	in.int("TimestampResolution", 1)
	in.int("SeqErrThresh", int64(t.SeqErrThresh))
	in.flag("ReordDupIgnoreEnable", t.IgnoreOooDup)
	in.int("LowerThresh", int64(t.LowThresh))
	in.int("UpperThresh", int64(t.UpperThresh))
	in.int("HighSpeedDelta", int64(t.HighSpeedDelta))
	in.int("SlowAdjThresh", int64(t.SlowAdjThresh))
	in.int("HSpeedThresh", highSpeedRow*1000000)
	in.str("RateAdjAlgorithm", algorithmName(t.Algorithm))
	in.flag("InterfaceDeterminesMax", t.InterfaceMax)
}

func (r *results) output() *jobj {
	out := &jobj{}
	out.time("BOMTime", r.bom)
	out.int("TmaxUsed", warnNoTrafficMs)
	out.int("TestInterval", int64(r.info.TestIntTime))
	out.int("TmaxRTTUsed", timeoutNoTraffic)
	out.int("TimestampResolutionUsed", 1)
	if r.complete {
		if len(r.intervals) > 0 {
			arr := make(jarr, 0, len(r.intervals))
			for i := range r.intervals {
				arr = append(arr, r.intervals[i].object())
			}
			out.add("IncrementalResult", arr)
		}
		if len(r.summary) > 0 {
			out.add("Summary", r.summary[0].object())
		}
		if r.modalKeys {
			out.add("ModalSummary", modal(len(r.summary), func(i int) jval { return r.summary[i].object() }))
		}
		if len(r.max) > 0 {
			out.add("AtMax", r.max[0].object())
		}
		if r.modalKeys {
			out.add("ModalResult", modal(len(r.max), func(i int) jval { return r.max[i].object() }))
			out.flag("ECNBleachingDetected", r.bleached)
		}
	}
	out.time("EOMTime", r.eom)
	if r.status == StatusSuccess {
		out.str("Status", "Complete")
	} else {
		out.str("Status", "Error_Other")
	}
	return out
}

// modal is the array of the second-mode elements (empty when single-mode).
func modal(n int, elem func(int) jval) jarr {
	arr := jarr{}
	for i := 1; i < n; i++ {
		arr = append(arr, elem(i))
	}
	return arr
}

// addQuality adds the fields common to the three result objects; sfx is
// the suffix OB-UDPST gives ratio and range keys ("", "Summary", "AtMax").
func addQuality(o *jobj, q *quality, sfx string) {
	o.num("DeliveredPercent", q.Delivered, precPercent)
	o.num("LossRatio"+sfx, q.LossRatio, precRatio)
	o.num("ReorderedRatio"+sfx, q.ReorderedRatio, precRatio)
	o.num("ReplicatedRatio"+sfx, q.ReplicatedRatio, precRatio)
	o.num("CEPercentOfDelivered", q.CEPercent, precPercent)
	o.u32("LossCount", q.Loss)
	o.u32("ReorderedCount", q.Ooo)
	o.u32("ReplicatedCount", q.Dup)
	o.u32("CECountOfDelivered", q.CE)
	o.num("PDVMin", q.PDVMin, precDelay)
	o.num("PDVAvg", q.PDVAvg, precDelay)
	o.num("PDVMax", q.PDVMax, precDelay)
	o.num("PDVRange"+sfx, q.PDVRange, precDelay)
	o.num("RTTMin", q.RTTMin, precDelay)
	o.num("RTTAvg", q.RTTAvg, precDelay)
	o.num("RTTMax", q.RTTMax, precDelay)
	o.num("RTTRange"+sfx, q.RTTRange, precDelay)
}

func (v *intervalResult) object() *jobj {
	o := &jobj{}
	o.int("Interval", int64(v.Interval))
	o.num("Seconds", v.Seconds, precSeconds)
	o.time("TimeOfSubInterval", v.Wall)
	o.int("ActiveConnections", int64(v.Active))
	addQuality(o, &v.Q, "")
	o.num("IPLayerCapacity", v.Capacity, precPercent)
	o.num("InterfaceEthMbps", v.Intf, precPercent)
	o.num("MinOnewayDelay", v.MinOneway, precDelay)
	return o
}

func (v *summaryResult) object() *jobj {
	o := &jobj{}
	o.int("Mode", int64(v.Mode))
	o.int("Intervals", int64(v.Intervals))
	o.int("ActiveConnections", int64(v.Active))
	addQuality(o, &v.Q, "Summary")
	o.num("IPLayerCapacitySummary", v.Capacity, precPercent)
	o.num("InterfaceEthMbps", v.Intf, precPercent)
	o.num("MinOnewayDelaySummary", v.MinOneway, precDelay)
	o.num("MinRTTSummary", v.MinRTT, precDelay)
	return o
}

func (v *maxResult) object() *jobj {
	o := &jobj{}
	o.int("Mode", int64(v.Mode))
	o.int("Intervals", int64(v.Intervals))
	o.time("TimeOfMax", v.Wall)
	o.int("ActiveConnections", int64(v.Active))
	addQuality(o, &v.Q, "AtMax")
	o.num("MaxIPLayerCapacity", v.Capacity, precPercent)
	o.num("InterfaceEthMbps", v.Intf, precPercent)
	o.num("MaxETHCapacityNoFCS", v.L2, precPercent)
	o.num("MaxETHCapacityWithFCS", v.L1, precPercent)
	o.num("MaxETHCapacityWithFCSVLAN", v.L0, precPercent)
	o.num("MinOnewayDelayAtMax", v.MinOneway, precDelay)
	return o
}

// extension holds our own figures. When the Load Sender skipped: Bursts it
// skipped because they fell too far behind, the datagrams those Bursts
// held, datagrams the kernel refused (withheld), and the plan they are
// measured against. Then the per-connection figures (conns.go), then
// SearchStillRising (1) when the search was still rising at the end, then
// ServerSelection when a failover search chose by round trip (selection.go),
// then ReassemblyFailures when the receiving host failed to reassemble
// fragments.
func (r *results) extension() *jobj {
	o := &jobj{}
	if r.skips.any() {
		addSkips(o, &r.skips)
		o.int("PlannedDatagrams", int64(r.skips.Planned))
		o.int("SentDatagrams", int64(r.skips.Delivered))
		if len(r.skipList) > 0 { // none with -s
			list := jarr{}
			for i := range r.skipList {
				e := &jobj{}
				e.int("Interval", int64(r.skipList[i].Interval))
				addSkips(e, &r.skipList[i].F)
				list = append(list, e)
			}
			o.add("Intervals", list)
		}
	}
	if r.connsShown() {
		o.add("Connections", r.connsArray())
	}
	if len(r.fine) > 0 {
		o.add("Delays", r.fineArray())
	}
	if r.fineMin.OWDSet || r.fineMin.RTTSet {
		o.add("Minimum", fineMinObject(&r.fineMin))
	}
	if r.stillRising {
		// The search was still rising at the end (rising.go): the
		// Maximum may be bound by the test's length.
		o.flag("SearchStillRising", true)
	}
	if r.groupWindow > 0 {
		// The executor's grouping window (engine.PoolOptions.Group):
		// each Burst may have left up to this late.
		o.int("GroupingWindowUs", r.groupWindow.Microseconds())
	}
	if r.selection != nil {
		o.add("ServerSelection", selectionObject(r.selection))
	}
	if r.reasmFails > 0 {
		// The host dropped fragments it could not reassemble
		// (ReassemblyNote): later Sub-Intervals understate the path.
		o.int("ReassemblyFailures", r.reasmFails)
	}
	return o
}

func addSkips(o *jobj, f *skipFigures) {
	o.int("SkippedBursts", int64(f.Bursts))
	o.int("SkippedDatagrams", int64(f.Dgrams))
	o.int("WithheldDatagrams", int64(f.Withheld))
	o.num("SkippedPercentOfPlan", f.percentOfPlan(), precPercent)
}
