"""``cupy.cuda.runtime`` of the stand-in."""


def getDeviceCount() -> int:
    return 1


is_hip = False
