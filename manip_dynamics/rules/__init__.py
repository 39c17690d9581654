"""ROS-free rules of the nodes (no rclpy import), unit-tested in test/rules without ROS.

=========================  =========================================================
module                     rule
=========================  =========================================================
``model_source``           where the dynamics node's robot model comes from (parameter,
                           file, topic), and the state a parameter change (strict:
                           refused if it does not fit) or a new description (lenient:
                           misfit parameters reset) leads to
``stamp_gate``             which joint_states stamps are processed: not stale, not from
                           the future, not out of order (restarted by a clock jump or a
                           new model)
``throttled_log``          a repeated message is logged at most once per period per key,
                           counting what it held back
``marker_schedule``        when ~/inertia_markers is updated: after a computed state, in
                           the gap before the next one (at most once per timer period)
``stats``                  diagnostics statistics: input/output rates, skipped states by
                           reason, callback time p50/p99, CPU per message, level
=========================  =========================================================

The node modules (:mod:`manip_dynamics.nodes`) only translate messages and call these.
"""
