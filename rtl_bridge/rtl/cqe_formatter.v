// CQE formatter: packs one completion into one 32-byte half of an irdma CQE, the
// RTL twin of TlmCqeFormatter (model/device/cqe_format.*). Layout: irdma spec C.3
// (main half, qword0..3) and C.4 (extended half, qword4..7, returned here as q0..q3).
//
// Handshake: valid/ready on both sides, one CQE per cycle. The output register is
// backed by one skid register, so in_ready and every output come straight from
// flops (no combinational path from out_ready to in_ready) and a stall costs no
// throughput. A CQE accepted at clock edge k is on q0..q3 with out_valid after k.
// Reset is synchronous, active low.
`default_nettype none

module cqe_formatter (
    input  wire        clk,
    input  wire        rst_n,

    `include "cqe_field_ports.vh"
    // Pass polarity of the ring slot the half lands in: the ext half of a 32-byte-mode
    // CQE may sit in the next pass, so it is per request, not per CQE.
    input  wire        polarity,
    input  wire        half,        // 0: main half, 1: extended half

    input  wire        in_valid,
    output wire        in_ready,
    output reg         out_valid,
    input  wire        out_ready,
    output wire [63:0] q0,
    output wire [63:0] q1,
    output wire [63:0] q2,
    output wire [63:0] q3
);

  // Main half. Zero fill: qword2 63:56 and qword3 49:47 are reserved; qword3 52 (SRQ)
  // is GEN_3 only and this device has no SRQs.
  wire [63:0] main_q0 = {tcp_seq_rtt, payload_len};
  wire [63:0] main_q1 = qp_ctx;
  wire [63:0] main_q2 = {8'd0, qp_id, stag_or_src_qpn};
  wire [63:0] main_q3 = {polarity, sq, op, error, solicited, stag_or_ipv4, 1'b0,
                         push_dropped, extended, 3'd0, wqe_idx, major, minor};

  // Extended half. Zero fill: qword4 63:32 (IMMDATAUP32) is unused by the drivers and
  // qword5 is the GEN_3 SRQ QP context.
  wire [63:0] ext_q0 = {32'd0, imm_data};
  wire [63:0] ext_q1 = 64'd0;
  wire [63:0] ext_q2 = {ud_vlan, ud_smac};
  wire [63:0] ext_q3 = {polarity, imm_valid, smac_valid, vlan_valid, 60'd0};

  wire [255:0] packed_half = half ? {ext_q3, ext_q2, ext_q1, ext_q0}
                                  : {main_q3, main_q2, main_q1, main_q0};

  reg         skid_valid;
  reg [255:0] skid_data;
  reg [255:0] out_data;

  // While the skid register is full the input stalls; it can only fill while the
  // output stalls, so the output register never waits on an empty skid.
  assign in_ready = !skid_valid;
  wire in_fire  = in_valid && in_ready;
  wire out_free = !out_valid || out_ready;  // output register may load this cycle

  always @(posedge clk) begin
    if (!rst_n) begin
      out_valid  <= 1'b0;
      skid_valid <= 1'b0;
    end else if (out_free) begin
      out_valid  <= skid_valid || in_fire;
      skid_valid <= 1'b0;
    end else if (in_fire) begin
      skid_valid <= 1'b1;
    end
  end

  // Data registers need no reset: they are only observed under their valid bits.
  // Skid data drains first; in_fire cannot coincide with it (in_ready is low).
  always @(posedge clk) begin
    if (out_free && (skid_valid || in_fire))
      out_data <= skid_valid ? skid_data : packed_half;
    if (!out_free && in_fire)
      skid_data <= packed_half;
  end

  assign {q3, q2, q1, q0} = out_data;

endmodule

`default_nettype wire
