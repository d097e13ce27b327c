package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/udpstp/udpstp/dataphase"
)

// ratesCommand prints the Sending Rate Table. Its layout is that of
// `udpst -S` without OB-UDPST's banner, so the two can be diffed to check
// that both ends of a test would use the same rows.
func ratesCommand() *cli.Command {
	return &cli.Command{
		Name:  "rates",
		Usage: "print the Sending Rate Table",
		Description: "Prints every row of the Sending Rate Table in the layout of OB-UDPST's\n" +
			"`udpst -S`. The table depends only on --no-jumbo and --traditional-mtu,\n" +
			"which client and server must set alike.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-jumbo", Aliases: []string{"j"}, Usage: "disable jumbo datagram sizes above 1 Gbps"},
			&cli.BoolFlag{Name: "traditional-mtu", Aliases: []string{"T"}, Usage: "use 1500-byte instead of 1250-byte packets"},
			&cli.BoolFlag{Name: "ipv6", Aliases: []string{"6"}, Usage: "show the payload sizes an IPv6 connection sends"},
		},
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			// cli stops parsing flags at the first positional argument, so
			// anything left over, even if it looks like a flag, was ignored.
			if c.Args().Present() {
				return cli.Exit(fmt.Sprintf("rates: unexpected argument %q (rates takes no arguments; flags go before any argument)", c.Args().First()), exitConfig)
			}
			o := dataphase.TableOptions{NoJumbo: c.Bool("no-jumbo"), TraditionalMTU: c.Bool("traditional-mtu")}
			if err := writeRateTable(c.App.Writer, o, c.Bool("ipv6")); err != nil {
				return fmt.Errorf("rates: %w", err)
			}
			return nil
		},
	}
}

// writeRateTable writes the table for o in the exact layout of OB-UDPST
// 9.0.0's -S output, banner excluded. With ipv6 the sizes are those an IPv6
// sender puts on the wire (20 bytes less); rows and rates do not change.
func writeRateTable(w io.Writer, o dataphase.TableOptions, ipv6 bool) error {
	family := "IPv4"
	if ipv6 {
		family = "IPv6"
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "Sending Rate Table for %s (Dual Transmitters, Referenced by Index)...\n", family)
	fmt.Fprintln(bw, "Index) TxInt(us) Payload Burst  + TxInt(us) Payload Burst   Add-On  = Mbps(L3/IP)")
	for i, r := range dataphase.BuildRateTable(o) {
		// A payload is shown as 0 when its transmitter sends no burst, even
		// if the row holds a size; the add-on is always shown as stored.
		p1, rnd1 := sizeText(r.UDPPayload1, r.BurstSize1 > 0, ipv6)
		p2, rnd2 := sizeText(r.UDPPayload2, r.BurstSize2 > 0, ipv6)
		a2, rndA := sizeText(r.UDPAddon2, true, ipv6)
		mark := ' '
		if rnd1 || rnd2 || rndA {
			mark = '~'
		}
		fmt.Fprintf(bw, "%5d) %8d  %7s %5d  + %8d  %7s %5d  %7s %c= %10.2f\n",
			i, r.TxInterval1, p1, r.BurstSize1, r.TxInterval2, p2, r.BurstSize2, a2, mark, r.L3Mbps(ipv6))
	}
	if o.NoJumbo {
		fmt.Fprintln(bw, "NOTE: Disabling jumbo datagram sizes may impede rates above 1 Gbps")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing sending rate table: %w", err)
	}
	return nil
}

// sizeText renders a payload or add-on field as -S does: the size, or
// "min-max" for a random size, or 0 for an unused transmitter. random
// reports whether the rendered part is random, for the '~' marker.
func sizeText(field uint32, used, ipv6 bool) (text string, random bool) {
	if !used {
		return "0", false
	}
	lo, hi := dataphase.PayloadRange(field, ipv6)
	if field&dataphase.RandomSize != 0 {
		return strconv.FormatUint(uint64(lo), 10) + "-" + strconv.FormatUint(uint64(hi), 10), true
	}
	return strconv.FormatUint(uint64(hi), 10), false
}
