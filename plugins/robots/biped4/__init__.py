"""The bundled 4-joint planar biped (hip and knee per leg) of the ``walk`` task."""
