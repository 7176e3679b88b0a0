// CQ writer: the part of the CQ engine that owns the CQ contexts and writes CQEs into host
// rings, the RTL twin of TlmCqWriter (model/device/cq_writer.*). Rules: irdma spec C.3-C.7
// (CQE halves, polarity, the shadow area's head and arm), F.4 (resize).
//
// One request at a time, from either request port, each answered on the response port in
// order of acceptance:
//  - a context command: create, resize (a new ring from slot 0, polarity 1, the arm and
//    overflow state kept), destroy, or the arm doorbell (shadow qword0..4 read in one burst;
//    the arm taken, ignored as stale, or firing at once when CQEs the driver has not consumed
//    are there); a resize or an arm of a CQ that does not exist changes nothing;
//  - a completion: the CHKOVERFLOW check (the driver's head re-read from shadow qword0 when
//    the space known falls below the threshold or below what the CQE needs), then the
//    extended half (the next slot, across the wrap too, or the same 64-byte slot) and only
//    after its write response the main half, each a 4-beat burst with its valid qword last;
//    then the arm: an armed CQ (solicited-only: a solicited completion) raises one event.
//
// Memory side: an AXI4 master with a 64-bit data bus. AWUSER marks the burst of a main
// half, so a bridge can tell a CQE's last write. Other ports: valid/ready.
// The context store is a register array read at acceptance and written back at the
// response; its width is CQ_ID_W bits of CQ number (the build passes the C++ adapter's
// kCqIdBits; the default serves lint). Reset is synchronous, active low.
`default_nettype none

module cq_writer #(
    parameter int CQ_ID_W = 10
) (
    input  wire               clk,
    input  wire               rst_n,

    // Context commands
    input  wire               ctx_valid,
    output wire               ctx_ready,
    input  wire [1:0]         ctx_op,            // CTX_CREATE, CTX_RESIZE, CTX_DESTROY, CTX_ARM
    input  wire [CQ_ID_W-1:0] ctx_cq,
    input  wire [63:0]        ctx_base,          // create, resize: the ring
    input  wire [20:0]        ctx_size,          // entries, 2 .. 2^21-1
    input  wire [63:0]        ctx_shadow,        // create: the shadow area
    input  wire [17:0]        ctx_threshold,     // SHADOW_READ_THRESHOLD
    input  wire               ctx_check_overflow,
    input  wire               ctx_ceqe_enable,   // ENCEQEMASK with a valid CEQ: events are CEQEs
    input  wire               ctx_cqe_64byte,    // create: AVOIDMEMCNFLCT

    // Completions: the CQ and the fields of cqe_formatter
    input  wire               cpl_valid,
    output wire               cpl_ready,
    input  wire [CQ_ID_W-1:0] cpl_cq,
    `include "cqe_field_ports.vh"

    // Outcome of each request
    output reg                rsp_valid,
    input  wire               rsp_ready,
    output reg  [2:0]         rsp_status,        // RSP_* below
    output reg  [20:0]        rsp_slot,          // written: the main half's slot
    output reg                rsp_wrapped,       // written: the tail wrapped (polarity flipped)
    output reg                rsp_head_read,     // the driver's head was re-read
    output reg                rsp_overflow_began,  // overflowed: this completion put the CQ in error
    output reg                rsp_armed,         // arm taken: it arms the CQ
    output reg                rsp_solicited_only,  // arm, or the arm an event consumed: solicited only
    output reg                rsp_event,         // an armed CQ's event: it is disarmed
    output reg                rsp_ceqe,          // ... and the event is a CEQE
    output reg                rsp_write_error,   // a CQE burst's write response was an error

    // AXI4 master, 64-bit data
    output reg                m_axi_awvalid,
    input  wire               m_axi_awready,
    output reg  [63:0]        m_axi_awaddr,
    output wire [7:0]         m_axi_awlen,
    output wire [2:0]         m_axi_awsize,
    output wire [1:0]         m_axi_awburst,
    output wire               m_axi_awuser,      // the burst is a main half
    output wire               m_axi_wvalid,
    input  wire               m_axi_wready,
    output wire [63:0]        m_axi_wdata,
    output wire [7:0]         m_axi_wstrb,
    output wire               m_axi_wlast,
    input  wire               m_axi_bvalid,
    output wire               m_axi_bready,
    input  wire [1:0]         m_axi_bresp,
    output reg                m_axi_arvalid,
    input  wire               m_axi_arready,
    output reg  [63:0]        m_axi_araddr,
    output reg  [7:0]         m_axi_arlen,
    output wire [2:0]         m_axi_arsize,
    output wire [1:0]         m_axi_arburst,
    input  wire               m_axi_rvalid,
    output wire               m_axi_rready,
    input  wire [63:0]        m_axi_rdata,
    input  wire [1:0]         m_axi_rresp,
    input  wire               m_axi_rlast,

    // Invariant monitors (simulation only; zero in synthesis): ASSERT_* bits, sticky
    output wire [2:0]         assert_fired
);

  localparam int CQS = 1 << CQ_ID_W;

  localparam logic [1:0] CTX_CREATE = 2'd0, CTX_RESIZE = 2'd1, CTX_DESTROY = 2'd2, CTX_ARM = 2'd3;
  localparam logic [2:0] RSP_DONE = 3'd0,        // create, resize, destroy done
                         RSP_WRITTEN = 3'd1,     // completion written
                         RSP_OVERFLOWED = 3'd2,  // completion dropped: the CQ is full or in error
                         RSP_NO_CQ = 3'd3,       // completion, arm or resize for a CQ that does not exist
                         RSP_ARMED = 3'd4,       // arm taken
                         RSP_STALE = 3'd5,       // arm with the sequence number already taken
                         RSP_ARM_FAILED = 3'd6;  // the shadow area could not be read

  typedef enum logic [3:0] {
    S_IDLE, S_CPL_CHECK, S_HEAD_AR, S_HEAD_R, S_CPL_DECIDE, S_FORMAT, S_BURST, S_B,
    S_ARM_AR, S_ARM_R, S_ARM_DECIDE, S_RESPOND
  } state_t;
  state_t state;

  // ---- Context store --------------------------------------------------------------------
  /*verilator coverage_off*/
  reg        live_m      [0:CQS-1];
  reg [63:0] base_m      [0:CQS-1];
  reg [20:0] size_m      [0:CQS-1];
  reg [63:0] shadow_m    [0:CQS-1];
  reg [17:0] threshold_m [0:CQS-1];
  reg        check_m     [0:CQS-1];
  reg        ceqe_m      [0:CQS-1];
  reg        wide_m      [0:CQS-1];  // 64-byte CQEs
  reg [20:0] tail_m      [0:CQS-1];
  reg        polarity_m  [0:CQS-1];
  reg [20:0] head_m      [0:CQS-1];  // the driver's head as last read
  reg        overflow_m  [0:CQS-1];  // in error: writes nothing more
  reg        armed_m     [0:CQS-1] /*verilator public_flat_rw*/;
  reg        solicited_m [0:CQS-1];  // the arm is solicited-only
  reg        seq_valid_m [0:CQS-1];  // an arm was taken
  reg [1:0]  seq_m       [0:CQS-1];  // its ARM_SEQ_NUM
  reg [13:0] resizes_m   [0:CQS-1];  // rings retired, as SW_CQ_SELECT counts them
  /*verilator coverage_on*/

  // The context of the request in hand.
  reg [CQ_ID_W-1:0] cq;
  reg        live, check, ceqe_en, wide, polarity, overflowed, armed, sol_only, seq_valid;
  reg [63:0] base, shadow;
  reg [20:0] size, tail, head;
  reg [17:0] threshold;
  reg [1:0]  seq;
  reg [13:0] resizes;

  // The completion in hand.
  reg [31:0] f_payload_len, f_tcp_seq_rtt, f_stag_or_src_qpn, f_imm_data;
  reg [63:0] f_qp_ctx;
  reg [23:0] f_qp_id;
  reg [15:0] f_minor, f_major, f_ud_vlan;
  reg [14:0] f_wqe_idx;
  reg [5:0]  f_op;
  reg [47:0] f_ud_smac;
  reg f_push_dropped, f_stag_or_ipv4, f_solicited, f_error, f_sq, f_extended;
  reg f_vlan_valid, f_smac_valid, f_imm_valid;

  // ---- Ring arithmetic -----------------------------------------------------------------
  // Slots the driver has not consumed, and what is free of the one slot the ring keeps
  // empty so that a full ring never looks empty.
  wire [20:0] used = tail >= head ? tail - head : tail + size - head;
  wire [20:0] free_slots = size - 21'd1 - used;
  wire [20:0] need = f_extended && !wide ? 21'd2 : 21'd1;
  wire [20:0] want = {3'd0, threshold} > need ? {3'd0, threshold} : need;
  wire        tail_at_end = tail == size - 21'd1;
  wire [20:0] next_slot = tail_at_end ? 21'd0 : tail + 21'd1;
  wire        next_at_end = next_slot == size - 21'd1;
  wire [2:0]  stride_shift = wide ? 3'd6 : 3'd5;
  wire [63:0] main_addr = base + ({43'd0, tail} << stride_shift);
  wire [63:0] ext_addr = wide ? main_addr + 64'd32 : base + ({43'd0, next_slot} << 5);

  // ---- Formatter -----------------------------------------------------------------------
  reg         half;       // the half in hand: 0 main, 1 extended
  reg         fmt_valid;  // offered to the formatter
  wire        fmt_ready, fmt_out_valid;
  wire [63:0] q0, q1, q2, q3;
  reg  [1:0]  beat;
  reg         w_done;     // the half's last beat has gone
  wire        w_fire = m_axi_wvalid && m_axi_wready;

  // The extended half of a 32-byte CQE in the next slot carries that slot's pass polarity.
  wire half_polarity = half && !wide && tail_at_end ? !polarity : polarity;

  cqe_formatter formatter (
      .clk(clk), .rst_n(rst_n),
      .payload_len(f_payload_len), .tcp_seq_rtt(f_tcp_seq_rtt), .qp_ctx(f_qp_ctx),
      .stag_or_src_qpn(f_stag_or_src_qpn), .qp_id(f_qp_id), .minor(f_minor), .major(f_major),
      .wqe_idx(f_wqe_idx), .push_dropped(f_push_dropped), .stag_or_ipv4(f_stag_or_ipv4),
      .solicited(f_solicited), .error(f_error), .op(f_op), .sq(f_sq), .extended(f_extended),
      .imm_data(f_imm_data), .ud_smac(f_ud_smac), .ud_vlan(f_ud_vlan),
      .vlan_valid(f_vlan_valid), .smac_valid(f_smac_valid), .imm_valid(f_imm_valid),
      .polarity(half_polarity), .half(half),
      .in_valid(fmt_valid), .in_ready(fmt_ready),
      .out_valid(fmt_out_valid), .out_ready(w_fire && beat == 2'd3),
      .q0(q0), .q1(q1), .q2(q2), .q3(q3));

  // ---- AXI -----------------------------------------------------------------------------
  assign m_axi_awlen = 8'd3;    // 4 beats: one 32-byte half
  assign m_axi_awsize = 3'd3;   // 8 bytes a beat
  assign m_axi_awburst = 2'd1;  // INCR
  assign m_axi_awuser = !half;
  // Data does not wait for the address (AXI4 A3.3.1): both channels run in S_BURST.
  assign m_axi_wvalid = state == S_BURST && fmt_out_valid && !w_done;
  assign m_axi_wdata = beat == 2'd0 ? q0 : beat == 2'd1 ? q1 : beat == 2'd2 ? q2 : q3;
  assign m_axi_wstrb = 8'hFF;
  assign m_axi_wlast = beat == 2'd3;
  assign m_axi_bready = state == S_B;
  assign m_axi_arsize = 3'd3;
  assign m_axi_arburst = 2'd1;
  assign m_axi_rready = state == S_HEAD_R || state == S_ARM_R;

  assign ctx_ready = state == S_IDLE;
  assign cpl_ready = state == S_IDLE && !ctx_valid;  // a context command goes first
  wire ctx_fire = ctx_valid && ctx_ready;
  wire cpl_fire = cpl_valid && cpl_ready;
  wire [CQ_ID_W-1:0] pick = ctx_fire ? ctx_cq : cpl_cq;
  wire resp_error = m_axi_rresp != 2'b00;

  reg        head_first_beat;  // the head read's next beat is its first
  reg [63:0] arm_head;  // shadow qword0 as the arm's burst read it
  reg [2:0]  arm_beat;
  reg        arm_error;

  // The arm doorbell's shadow qword4 (CQ_DBSA_*).
  wire [13:0] arm_sw_cq_select = m_axi_rdata[13:0];
  wire        arm_next = m_axi_rdata[14];
  wire        arm_next_se = m_axi_rdata[15];
  wire [1:0]  arm_seq_num = m_axi_rdata[17:16];
  reg  [17:0] arm_word;  // qword4's arm fields, latched
  wire        fire_now = arm_word[14] &&
                         (arm_word[13:0] != resizes || arm_head != {43'd0, tail});

  always @(posedge clk) begin
    if (!rst_n) begin
      state <= S_IDLE;
      rsp_valid <= 1'b0;
      fmt_valid <= 1'b0;
      m_axi_awvalid <= 1'b0;
      m_axi_arvalid <= 1'b0;
    end else begin
      case (state)
        S_IDLE:
          if (ctx_fire || cpl_fire) begin
            {rsp_head_read, rsp_overflow_began, rsp_armed, rsp_solicited_only} <= 4'd0;
            {rsp_event, rsp_ceqe, rsp_write_error, rsp_wrapped} <= 4'd0;
            rsp_slot <= 21'd0;
            cq <= pick;
            live <= live_m[pick];
            base <= base_m[pick];
            size <= size_m[pick];
            shadow <= shadow_m[pick];
            threshold <= threshold_m[pick];
            check <= check_m[pick];
            ceqe_en <= ceqe_m[pick];
            wide <= wide_m[pick];
            tail <= tail_m[pick];
            polarity <= polarity_m[pick];
            head <= head_m[pick];
            overflowed <= overflow_m[pick];
            armed <= armed_m[pick];
            sol_only <= solicited_m[pick];
            seq_valid <= seq_valid_m[pick];
            seq <= seq_m[pick];
            resizes <= resizes_m[pick];
            if (ctx_fire) begin
              rsp_status <= RSP_DONE;
              state <= ctx_op == CTX_ARM ? S_ARM_AR : S_RESPOND;
              if (ctx_op == CTX_CREATE || (ctx_op == CTX_RESIZE && live_m[pick])) begin
                live <= 1'b1;
                base <= ctx_base;
                size <= ctx_size;
                threshold <= ctx_threshold;
                check <= ctx_check_overflow;
                ceqe_en <= ctx_ceqe_enable;
                tail <= 21'd0;
                polarity <= 1'b1;
                head <= 21'd0;
                resizes <= resizes_m[pick] + 14'd1;
              end
              if (ctx_op == CTX_CREATE) begin
                shadow <= ctx_shadow;
                wide <= ctx_cqe_64byte;
                overflowed <= 1'b0;
                armed <= 1'b0;
                sol_only <= 1'b0;
                seq_valid <= 1'b0;
                resizes <= 14'd0;
              end
              if (ctx_op == CTX_DESTROY) live <= 1'b0;
              // An arm or a resize for a CQ that does not exist changes nothing.
              if ((ctx_op == CTX_ARM || ctx_op == CTX_RESIZE) && !live_m[pick]) begin
                rsp_status <= RSP_NO_CQ;
                state <= S_RESPOND;
              end
            end else begin
              {f_payload_len, f_tcp_seq_rtt, f_qp_ctx, f_stag_or_src_qpn} <=
                  {payload_len, tcp_seq_rtt, qp_ctx, stag_or_src_qpn};
              {f_qp_id, f_minor, f_major, f_wqe_idx, f_op} <= {qp_id, minor, major, wqe_idx, op};
              {f_push_dropped, f_stag_or_ipv4, f_solicited, f_error, f_sq, f_extended} <=
                  {push_dropped, stag_or_ipv4, solicited, error, sq, extended};
              {f_imm_data, f_ud_smac, f_ud_vlan} <= {imm_data, ud_smac, ud_vlan};
              {f_vlan_valid, f_smac_valid, f_imm_valid} <= {vlan_valid, smac_valid, imm_valid};
              state <= S_CPL_CHECK;
            end
          end

        S_CPL_CHECK:
          if (!live) begin
            rsp_status <= RSP_NO_CQ;
            state <= S_RESPOND;
          end else if (check && !overflowed && free_slots < want) begin
            rsp_head_read <= 1'b1;
            m_axi_arvalid <= 1'b1;
            m_axi_araddr <= shadow;
            m_axi_arlen <= 8'd0;
            head_first_beat <= 1'b1;
            state <= S_HEAD_AR;
          end else begin
            state <= S_CPL_DECIDE;
          end

        S_HEAD_AR:
          if (m_axi_arready) begin
            m_axi_arvalid <= 1'b0;
            state <= S_HEAD_R;
          end

        S_HEAD_R:
          if (m_axi_rvalid) begin
            // The head is a one-beat burst's only beat; any other burst reads no head.
            if (!resp_error && m_axi_rlast && head_first_beat && m_axi_rdata < {43'd0, size})
              head <= m_axi_rdata[20:0];
            head_first_beat <= 1'b0;
            if (m_axi_rlast) state <= S_CPL_DECIDE;
          end

        S_CPL_DECIDE:
          if (check && (overflowed || free_slots < need)) begin
            rsp_status <= RSP_OVERFLOWED;
            rsp_overflow_began <= !overflowed;
            overflowed <= 1'b1;
            state <= S_RESPOND;
          end else begin
            rsp_status <= RSP_WRITTEN;
            rsp_slot <= tail;
            half <= f_extended;
            fmt_valid <= 1'b1;
            state <= S_FORMAT;
          end

        S_FORMAT:
          if (fmt_ready) begin
            fmt_valid <= 1'b0;
            m_axi_awvalid <= 1'b1;
            m_axi_awaddr <= half ? ext_addr : main_addr;
            beat <= 2'd0;
            w_done <= 1'b0;
            state <= S_BURST;
          end

        S_BURST: begin
          if (m_axi_awready) m_axi_awvalid <= 1'b0;
          if (w_fire) begin
            beat <= beat + 2'd1;
            if (m_axi_wlast) w_done <= 1'b1;
          end
          if ((!m_axi_awvalid || m_axi_awready) && (w_done || (w_fire && m_axi_wlast))) state <= S_B;
        end

        S_B:
          if (m_axi_bvalid) begin
            if (m_axi_bresp != 2'b00) rsp_write_error <= 1'b1;
            if (half) begin
              half <= 1'b0;
              fmt_valid <= 1'b1;
              state <= S_FORMAT;
            end else begin
              // The tail moves past the CQE: two slots for a 32-byte extended one.
              if (f_extended && !wide) begin
                tail <= next_at_end ? 21'd0 : next_slot + 21'd1;
                polarity <= polarity ^ tail_at_end ^ next_at_end;
                rsp_wrapped <= tail_at_end || next_at_end;
              end else begin
                tail <= next_slot;
                polarity <= polarity ^ tail_at_end;
                rsp_wrapped <= tail_at_end;
              end
              if (armed && (!sol_only || f_solicited)) begin
                armed <= 1'b0;
                rsp_event <= 1'b1;
                rsp_ceqe <= ceqe_en;
                rsp_solicited_only <= sol_only;
              end
              state <= S_RESPOND;
            end
          end

        S_ARM_AR: begin
          m_axi_arvalid <= 1'b1;
          m_axi_araddr <= shadow;
          m_axi_arlen <= 8'd4;  // qword0 (the head) .. qword4 (the arm)
          arm_beat <= 3'd0;
          arm_error <= 1'b0;
          if (m_axi_arvalid && m_axi_arready) begin
            m_axi_arvalid <= 1'b0;
            state <= S_ARM_R;
          end
        end

        S_ARM_R:
          if (m_axi_rvalid) begin
            arm_beat <= arm_beat + 3'd1;
            // An error beat, or a burst of other than 5 beats, reads no arm.
            if (resp_error || m_axi_rlast != (arm_beat == 3'd4)) arm_error <= 1'b1;
            if (arm_beat == 3'd0) arm_head <= m_axi_rdata;
            if (arm_beat == 3'd4) arm_word <= {arm_seq_num, arm_next_se, arm_next, arm_sw_cq_select};
            if (m_axi_rlast) state <= S_ARM_DECIDE;
          end

        S_ARM_DECIDE: begin
          state <= S_RESPOND;
          if (arm_error) begin
            rsp_status <= RSP_ARM_FAILED;
          end else begin
            rsp_solicited_only <= !arm_word[14];
            if (seq_valid && seq == arm_word[17:16]) begin
              rsp_status <= RSP_STALE;
            end else begin
              rsp_status <= RSP_ARMED;
              seq_valid <= 1'b1;
              seq <= arm_word[17:16];
              rsp_armed <= arm_word[14] || arm_word[15];
              sol_only <= !arm_word[14];
              armed <= (arm_word[14] || arm_word[15]) && !fire_now;
              rsp_event <= fire_now;
              rsp_ceqe <= fire_now && ceqe_en;
            end
          end
        end

        S_RESPOND:
          if (!rsp_valid) begin
            rsp_valid <= 1'b1;
          end else if (rsp_ready) begin
            rsp_valid <= 1'b0;
            state <= S_IDLE;
          end

        default: state <= S_IDLE;
      endcase
    end
  end

  // The context in hand goes back to the store as the response is offered. Out of reset no
  // CQ exists: while reset is held, a context a cycle is cleared (the harness holds it for
  // CQS cycles).
  reg [CQ_ID_W-1:0] clear_idx;
  always @(posedge clk) begin
    if (!rst_n) begin
      live_m[clear_idx] <= 1'b0;
      clear_idx <= clear_idx + 1'b1;
    end else if (state == S_RESPOND && !rsp_valid) begin
      live_m[cq] <= live;
      base_m[cq] <= base;
      size_m[cq] <= size;
      shadow_m[cq] <= shadow;
      threshold_m[cq] <= threshold;
      check_m[cq] <= check;
      ceqe_m[cq] <= ceqe_en;
      wide_m[cq] <= wide;
      tail_m[cq] <= tail;
      polarity_m[cq] <= polarity;
      head_m[cq] <= head;
      overflow_m[cq] <= overflowed;
      armed_m[cq] <= armed;
      solicited_m[cq] <= sol_only;
      seq_valid_m[cq] <= seq_valid;
      seq_m[cq] <= seq;
      resizes_m[cq] <= resizes;
    end
  end

`ifdef SYNTHESIS
  assign assert_fired = 3'd0;
`else
  localparam int ASSERT_OVERWRITE = 0, ASSERT_MAIN_FIRST = 1, ASSERT_EVENT_UNARMED = 2;
  // ---- Invariant monitors --------------------------------------------------------------
  // Each judges what the block does at its ports (the slot an address falls in, the events
  // its responses report) against state of its own or the context; which half a burst
  // carries is taken from the datapath's `half`, as AWUSER says too.
  reg [2:0] fired;
  reg       ext_written;  // this completion's extended half has had its write response
  reg       mon_armed [0:CQS-1];  // an arm that armed, not yet consumed by an event
  assign assert_fired = fired;
  wire aw_fire = m_axi_awvalid && m_axi_awready;
  // The slot an address falls in, and how far it is past the driver's head.
  wire [63:0] aw_offset = m_axi_awaddr - base - (wide && half ? 64'd32 : 64'd0);
  wire [63:0] aw_slot64 = aw_offset >> stride_shift;
  wire [20:0] aw_slot = aw_slot64[20:0];
  wire [20:0] aw_distance = aw_slot >= head ? aw_slot - head : aw_slot + size - head;
  wire responding = state == S_RESPOND && !rsp_valid;  // the response's first cycle
  always @(posedge clk) begin
    if (!rst_n) begin
      fired <= 3'd0;
      ext_written <= 1'b0;
    end else begin
      if (state == S_IDLE) ext_written <= 1'b0;
      if (state == S_B && m_axi_bvalid && half) ext_written <= 1'b1;
      // A checked CQ never has a slot written that holds a CQE the driver has not consumed,
      // nor its last free slot.
      if (aw_fire && check && (aw_offset[4:0] != 5'd0 || aw_slot64 >= {43'd0, size} || aw_distance > size - 21'd2))
        fired[ASSERT_OVERWRITE] <= 1'b1;
      // A main half leaves only after its extended half was answered.
      if (aw_fire && !half && f_extended && !ext_written) fired[ASSERT_MAIN_FIRST] <= 1'b1;
      // One event per arm: an arm's response says whether it armed the CQ; a completion's
      // event must find it armed, and disarms it.
      if (responding && rsp_status == RSP_ARMED) mon_armed[cq] <= rsp_armed && !rsp_event;
      if (responding && rsp_status == RSP_WRITTEN && rsp_event) begin
        if (!mon_armed[cq]) fired[ASSERT_EVENT_UNARMED] <= 1'b1;
        mon_armed[cq] <= 1'b0;
      end
      if (ctx_fire && ctx_op == CTX_CREATE) mon_armed[ctx_cq] <= 1'b0;
    end
  end
`endif

endmodule

`default_nettype wire
