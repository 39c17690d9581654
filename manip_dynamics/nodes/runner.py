"""What the nodes share: ``main()`` (init, spin on one thread, clean shutdown) and
reading array parameters that may be unset."""
from __future__ import annotations

from typing import Callable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter


def run_node(make_node: Callable[[], Node], args=None,
             fatal: tuple[type[BaseException], ...] = (), name: str = "node") -> int:
    """Build the node with ``make_node()`` and spin it on a SingleThreadedExecutor.

    Ctrl-C and an external shutdown end the spin quietly (exit code 0). An exception of a
    type in ``fatal`` raised while building the node (a bad start-up configuration) is
    logged as FATAL ``cannot start: ...`` under the logger ``name`` and gives exit
    code 2. The node is always destroyed and rclpy shut down.
    """
    rclpy.init(args=args)
    node = None
    try:
        node = make_node()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except fatal as exc:
        rclpy.logging.get_logger(name).fatal(f"cannot start: {exc}")
        return 2
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


def array_parameter(node: Node, name: str) -> list:
    """The value of an array parameter as a list; [] when it is unset (a ROS 2 parameter
    file cannot express an empty list, so "unset" is how an empty default arrives)."""
    p = node.get_parameter_or(name, None)
    if p is None or p.type_ == Parameter.Type.NOT_SET or p.value is None:
        return []
    return list(p.value)
